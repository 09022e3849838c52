"""Strict JSON bodies: wrong types are a 400, never silently converted.

Litestar validates `data` with `msgspec.convert(..., strict=False)`, which
accepts `"top_k": "3"` as 3, `"phase": 2.0` as 2 and `"full": 0` as False.
The contract says wrong types get a 4xx, so handlers re-decode the (cached)
raw body and convert it strictly; the `data` parameter stays for the OpenAPI
schema and Litestar's own checks. One leniency remains, on purpose: JSON has a
single number type and JSON Schema counts 3.0 as an integer, so integral
floats are accepted where an int is expected.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from litestar import Request
from litestar.exceptions import ValidationException

T = TypeVar("T")


async def strict_body(request: Request[Any, Any, Any], type_: type[T], *, optional: bool = False) -> T | None:
    raw = await request.body()
    if optional and raw.strip() in (b"", b"null"):
        return None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as err:
        raise ValidationException(f"request body is not valid JSON: {err}") from err
    try:
        return msgspec.convert(_integral_floats_as_ints(value), type_, strict=True)
    except msgspec.ValidationError as err:
        raise ValidationException(f"invalid request body: {err}") from err


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
