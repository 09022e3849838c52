"""Uniform error bodies: `{"error": "...", "detail": ...}`.

Client mistakes (validation, unknown route, wrong method, body too large,
auth) keep their 4xx status; only unexpected exceptions become 500, and
those never echo internals to the caller.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException
from litestar.openapi import ResponseSpec
from litestar.types import ExceptionHandlersMap

from service.domain.types import Base

log = logging.getLogger(__name__)

BODY = "(body)"
"""The `field` of a problem with the request body as a whole (not JSON, missing)."""


class ErrorBody(Base, frozen=True):
    """Body of every error response.

    `detail` is a list whose every entry has a non-empty `message`: for a 400 one entry per
    rejected field (`{"field", "message"}`), for a 409 what is in the way (e.g. the running
    job); null when there is nothing more to say.
    """

    error: str
    detail: list[dict[str, Any]] | None = None


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
    409: "Conflict with the current state (e.g. a duplicate)",
    413: "Request body too large",
    415: "Unsupported media type",
    422: "Request understood but rejected",
    429: "Too many requests: retry after `Retry-After` seconds",
    503: "Not ready yet",
}


_AT_PATH = re.compile(r" - at `\$\.([^`]+)`$")
_NAMED_FIELD = re.compile(r"(?:unknown|required) field `([^`]+)`")
_GENERIC = "Validation failed for "


def _problem(item: Any) -> dict[str, Any]:
    """One detail entry of a 400 as `{"field", "message"}`.

    Litestar reports `{"key", "message", "source"}` with key `data` for the body
    as a whole (and the bare KeyError text `'data'` when there is no body at
    all); ours already carry `field`.
    """
    if not isinstance(item, dict):
        return {"field": BODY, "message": str(item)}
    if "field" in item:
        return dict(item)
    message = str(item.get("message", ""))
    field = str(item.get("key") or BODY)
    if at := _AT_PATH.search(message):
        field, message = at[1], message[: at.start()]
    elif named := _NAMED_FIELD.search(message):
        # Litestar's key is the enclosing object ("reply_to"); the message names the field inside it.
        parent = "" if field in ("data", BODY) else field
        field = f"{parent}.{named[1]}" if parent and parent != named[1] else named[1]
    if field == "data":
        field = BODY
    if message == "'data'":
        message = "a JSON object is required"
    return {"field": field, "message": message}


_TRUNCATED = "Input data was truncated"
_MALFORMED = "JSON is malformed: "


def readable_json_error(message: str) -> str:
    """msgspec's decode errors as a person reads them ("Input data was truncated" says
    nothing about the body); any other message unchanged."""
    if message == _TRUNCATED:
        return "the request body is not complete JSON: it ends early"
    if message.startswith(_MALFORMED):
        return "the request body is not valid JSON: " + message.removeprefix(_MALFORMED)
    return message


def _validation_error(exc: HTTPException) -> ErrorBody:
    """Every 400 in one shape: an error naming the field(s), one entry per field."""
    text = readable_json_error(str(exc.detail))
    if isinstance(exc.extra, list) and exc.extra:
        problems = [_problem(item) for item in exc.extra]
    elif at := _AT_PATH.search(text):  # a msgspec message of our strict decode
        problems = [{"field": at[1], "message": text[: at.start()].split(": ", 1)[-1]}]
        text = text[: at.start()]
    else:
        problems = [{"field": BODY, "message": text}]
    problems = [{**p, "message": readable_json_error(str(p.get("message") or _own_part(text, p["field"])))}
                for p in problems]
    if text.startswith(_GENERIC) or not text:  # Litestar's text names no field: ours does
        text = "invalid request: " + "; ".join(f"`{p['field']}`: {p['message']}" for p in problems)
    return ErrorBody(error=text, detail=problems)


def _own_part(text: str, field: str) -> str:
    """A field's message from the error's text, when the entry came without one."""
    for prefix in (f"`{field}`: ", f"{field}: "):
        if text.startswith(prefix):
            return text.removeprefix(prefix)
    return text


def _with_message(entry: Any, text: str) -> Any:
    """A client shows `detail[].message`: never an entry without one."""
    if isinstance(entry, dict) and not entry.get("message"):
        return {**entry, "message": text}
    return entry


def http_exception_handler(
    request: Request[Any, Any, Any], exc: HTTPException
) -> Response[ErrorBody]:
    if exc.status_code == 400:
        body = _validation_error(exc)
    elif exc.status_code == 413:
        body = ErrorBody(error=_too_large(request, str(exc.detail)))
    else:
        extra = exc.extra
        detail = [_with_message(e, exc.detail) for e in extra] if isinstance(extra, list) and extra else None
        body = ErrorBody(error=exc.detail, detail=detail)
    return Response(body, status_code=exc.status_code, headers=exc.headers)


def _too_large(request: Request[Any, Any, Any], detail: str) -> str:
    """Litestar's 413 says "Request Entity Too Large"; this one also says which limit."""
    try:
        limit = request.route_handler.resolve_request_max_body_size()
    except Exception:  # no route resolved: the bare message rather than a 500
        limit = None
    return f"{detail}: the request body is larger than {limit} bytes" if limit else detail


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
