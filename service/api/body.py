"""Strict JSON bodies: wrong types and wrong media types are a 4xx, never guessed.

Litestar validates `data` with `msgspec.convert(..., strict=False)`, which
accepts `"top_k": "3"` as 3, `"phase": 2.0` as 2 and `"full": 0` as False.
The contract says wrong types get a 4xx, so handlers re-decode the (cached)
raw body and convert it strictly; the `data` parameter stays for the OpenAPI
schema and Litestar's own checks. One leniency remains, on purpose: JSON has a
single number type and JSON Schema counts 3.0 as an integer, so integral
floats are accepted where an int is expected.

Litestar also parses any body as JSON whatever its Content-Type says;
`require_json_body` (the app's before-request hook, run after the guards and
before the body is parsed) answers 415 instead.

The same hook refuses a body nested deeper than `MAX_JSON_DEPTH` (400 naming the
limit) before anything decodes it: msgspec and the strict re-decode recurse once
per level, and a 2 KB body of 5,000 `[` would otherwise end in RecursionError (500).
One scan of the raw bytes, for every operation that takes a JSON body.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec
from litestar import Request
from litestar.exceptions import HTTPException, ValidationException

from service.api.errors import BODY, readable_json_error

T = TypeVar("T")

JSON_MEDIA_TYPE = "application/json"
_AT_PATH = re.compile(r"^(.*) - at `\$\.([^`]+)`$")

# The request limits, in one place (service/app.py applies the size; /context has its own, larger).
MAX_BODY_BYTES = 16 * 1024
"""A query is at most a few hundred characters."""
MAX_JSON_DEPTH = 32
"""Arrays and objects inside each other; the API's own bodies nest a handful of levels."""
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_JSON_NESTING = re.compile(rb"[\[\]{}]")


class UnsupportedMediaType(HTTPException):
    status_code = 415


async def require_json_body(request: Request[Any, Any, Any]) -> None:
    """415 for a request body that is not declared `application/json` (or `+json`)."""
    if "data" not in request.route_handler.parsed_fn_signature.parameters:
        return  # the operation takes no body: nothing is parsed
    length = request.headers.get("content-length")
    if length is None and not request.headers.get("transfer-encoding"):
        return  # no body: required ones are refused by validation (400 naming the body)
    if length is not None and length.isdigit():
        limit = request.route_handler.resolve_request_max_body_size()
        if int(length) == 0 or (limit is not None and int(length) > limit):
            return  # empty, or too large: Litestar answers 413 before anything else
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != JSON_MEDIA_TYPE and not media_type.endswith("+json"):
        raise UnsupportedMediaType(
            f"unsupported Content-Type {media_type or '(none)'!r}: send {JSON_MEDIA_TYPE}",
            extra=[{"field": "Content-Type", "message": f"expected {JSON_MEDIA_TYPE}"}],
        )
    if json_depth(await request.body(), MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise invalid(BODY, f"JSON nested deeper than {MAX_JSON_DEPTH} levels")


def json_depth(raw: bytes, limit: int) -> int:
    """How deep arrays and objects nest in `raw` (brackets outside strings), counted up to
    `limit + 1`: linear in the body, whatever it holds (malformed JSON is counted as far as it goes)."""
    text = _JSON_STRING.sub(b"0", raw)  # every string closed: any quote left opens one
    unterminated = text.find(b'"')  # a string that never closes: the rest is inside it
    if unterminated >= 0:
        text = text[:unterminated]
    depth = deepest = 0
    for bracket in _JSON_NESTING.finditer(text):
        depth += 1 if bracket[0] in (b"[", b"{") else -1
        deepest = max(deepest, depth)
        if deepest > limit:
            break
    return deepest


def invalid(field: str, message: str) -> ValidationException:
    """A 400 naming the field, in the shape every validation error has."""
    return ValidationException(f"`{field}`: {message}", extra=[{"field": field, "message": message}])


async def strict_body(request: Request[Any, Any, Any], type_: type[T], *, optional: bool = False) -> T | None:
    raw = await request.body()
    if optional and raw.strip() in (b"", b"null"):
        return None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as err:
        raise invalid(BODY, readable_json_error(str(err))) from err
    try:
        return msgspec.convert(_integral_floats_as_ints(value), type_, strict=True)
    except msgspec.ValidationError as err:
        found = _AT_PATH.match(str(err))
        field, message = (found[2], found[1]) if found else (BODY, str(err))
        raise invalid(field, message) from err


def _integral_floats_as_ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral_floats_as_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral_floats_as_ints(v) for v in value]
    return value


async def strict_required(request: Request[Any, Any, Any], type_: type[T]) -> T:
    body = await strict_body(request, type_)
    assert body is not None  # not optional: a missing body fails to decode
    return body
