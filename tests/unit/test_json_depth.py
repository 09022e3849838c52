"""The request body's nesting scan (service/api/body.py) and msgspec's messages made readable."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from service.api.body import MAX_JSON_DEPTH, json_depth
from service.api.errors import readable_json_error

VALID = [
    b'{"query": "home"}',
    b"[[[]]]",
    b'{"a": [{"b": [1, {"c": {}}]}]}',
    b'{"query": "[[[[{{{{"}',  # brackets inside a string are text
    rb'{"a": "\"[[[", "b": [[1]]}',  # an escaped quote does not end the string
    rb'{"a": "\\", "b": [[1]]}',  # an escaped backslash does
    b"42",
]


def _decoded_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_decoded_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_decoded_depth, value), default=0)
    return 0


@pytest.mark.parametrize("raw", VALID)
def test_depth_of_valid_json_is_the_decoded_depth(raw: bytes) -> None:
    assert json_depth(raw, MAX_JSON_DEPTH) == _decoded_depth(msgspec.json.decode(raw))


def test_depth_of_malformed_json_counts_as_far_as_it_goes() -> None:
    assert json_depth(b'[[["abc [[[[', MAX_JSON_DEPTH) == 3  # an unterminated string: the rest is inside it
    assert json_depth(b"", MAX_JSON_DEPTH) == 0


def test_depth_stops_counting_past_the_limit() -> None:
    deep = b"[" * 8000 + b"]" * 8000
    assert json_depth(deep, MAX_JSON_DEPTH) == MAX_JSON_DEPTH + 1
    assert json_depth(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH, MAX_JSON_DEPTH) == MAX_JSON_DEPTH


def test_msgspec_messages_read_as_sentences() -> None:
    for raw, expected in ((b'{"query": "ho', "the request body is not complete JSON: it ends early"),
                          (b'{"query": "home"} x', "the request body is not valid JSON: trailing characters")):
        with pytest.raises(msgspec.DecodeError) as info:
            msgspec.json.decode(raw)
        assert readable_json_error(str(info.value)).startswith(expected)
    assert readable_json_error("Expected `str`, got `int`") == "Expected `str`, got `int`"
