"""Strict JSON bodies: wrong types are a 400, never silently converted.

Litestar validates `data` with `msgspec.convert(..., strict=False)`, which
accepts `"top_k": "3"` as 3, `"phase": 2.0` as 2 and `"full": 0` as False.
The contract says wrong types get a 4xx, so handlers re-decode the (cached)
raw body with msgspec's strict JSON decoder; the `data` parameter stays for
the OpenAPI schema and Litestar's own checks.
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
        return msgspec.json.decode(raw, type=type_)
    except msgspec.ValidationError as err:
        raise ValidationException(f"invalid request body: {err}") from err
    except msgspec.DecodeError as err:
        raise ValidationException(f"request body is not valid JSON: {err}") from err


async def strict_required(request: Request[Any, Any, Any], type_: type[T]) -> T:
    body = await strict_body(request, type_)
    assert body is not None  # not optional: a missing body fails to decode
    return body
