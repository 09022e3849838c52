"""Uniform error bodies: `{"error": "...", "detail": ...}`.

Client mistakes (validation, unknown route, wrong method, body too large,
auth) keep their 4xx status; only unexpected exceptions become 500, and
those never echo internals to the caller.
"""

from __future__ import annotations

import logging
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException
from litestar.openapi import ResponseSpec
from litestar.types import ExceptionHandlersMap

from service.domain.types import Base

log = logging.getLogger(__name__)


class ErrorBody(Base, frozen=True):
    """Body of every error response."""

    error: str
    detail: Any = None
    """Structured detail (validation errors, rejected files); `Any` rather than
    `object` because Litestar's OpenAPI generator cannot render `object`."""


def client_errors(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI `responses=` documenting our `{error, detail}` body for these 4xx.

    Litestar documents validation errors with its own default body
    (`{status_code, detail, extra}`); our handlers answer `ErrorBody`, so
    every handler that reads a body declares its real error responses here
    (the schemathesis run in tests/integration/test_fuzz_api.py checks it).
    """
    return {status: ResponseSpec(data_container=ErrorBody, description=_DESCRIPTIONS[status],
                                 generate_examples=False)  # no random example bodies in the docs
            for status in statuses}


_DESCRIPTIONS = {
    400: "Invalid request: malformed JSON, unknown field, wrong type or value out of range",
    401: "Missing or malformed Authorization header",
    403: "Wrong admin token, or admin disabled",
    404: "Not found",
    413: "Request body too large",
    415: "Unsupported media type",
    422: "Request understood but rejected",
    503: "Not ready yet",
}


def http_exception_handler(
    _: Request[Any, Any, Any], exc: HTTPException
) -> Response[ErrorBody]:
    detail = exc.extra if exc.extra else None
    return Response(
        ErrorBody(error=exc.detail, detail=detail),
        status_code=exc.status_code,
        headers=exc.headers,
    )


def internal_error_handler(
    request: Request[Any, Any, Any], exc: Exception
) -> Response[ErrorBody]:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return Response(ErrorBody(error="internal server error"), status_code=500)


def unicode_error_handler(
    request: Request[Any, Any, Any], exc: UnicodeDecodeError
) -> Response[ErrorBody]:
    """Litestar lets msgspec's UnicodeDecodeError for a non-UTF-8 JSON body
    escape as a 500; a body the client sent is a client error. Anything else
    that fails to decode is still a server error."""
    if request.method in ("POST", "PUT", "PATCH", "DELETE") and isinstance(exc.object, bytes):
        return Response(
            ErrorBody(error=f"request body is not valid UTF-8 (byte {exc.start})"), status_code=400
        )
    return internal_error_handler(request, exc)


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    HTTPException: http_exception_handler,
    UnicodeDecodeError: unicode_error_handler,
    Exception: internal_error_handler,
}
