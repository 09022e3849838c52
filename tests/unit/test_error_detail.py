"""Every entry of an error's `detail[]` says what is wrong in `message` (issue 42 item 6): a
client shows it, and an entry that came without one gets the error's own words."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from litestar.exceptions import ClientException, ValidationException

from service.api.body import invalid
from service.api.errors import http_exception_handler


def _detail(exc: ClientException) -> list[dict[str, Any]]:
    response = http_exception_handler(None, exc)  # type: ignore[arg-type]
    body: dict[str, Any] = msgspec.to_builtins(response.content)
    return body["detail"] or []


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (invalid("doc_slug", "no page 'x' in the corpus"), [{"field": "doc_slug", "message": "no page 'x' in the corpus"}]),
        (ClientException(status_code=400, detail="doc_slug: no page 'x' in the corpus", extra=[{"field": "doc_slug"}]),
         [{"field": "doc_slug", "message": "no page 'x' in the corpus"}]),
        (ValidationException("Validation failed for POST /x", extra=[{"key": "yaml", "message": ""}]),
         [{"field": "yaml", "message": "Validation failed for POST /x"}]),
        (ClientException(status_code=409, detail="a seed is already running", extra=[{"job": {"id": "j1"}}]),
         [{"job": {"id": "j1"}, "message": "a seed is already running"}]),
    ],
)
def test_every_detail_entry_has_a_message(exc: ClientException, expected: list[dict[str, Any]]) -> None:
    assert _detail(exc) == expected
