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
from litestar.types import ExceptionHandlersMap

from service.domain.types import Base

log = logging.getLogger(__name__)


class ErrorBody(Base, frozen=True):
    """Body of every error response."""

    error: str
    detail: Any = None
    """Structured detail (validation errors, rejected files); `Any` rather than
    `object` because Litestar's OpenAPI generator cannot render `object`."""


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


EXCEPTION_HANDLERS: ExceptionHandlersMap = {
    HTTPException: http_exception_handler,
    Exception: internal_error_handler,
}
