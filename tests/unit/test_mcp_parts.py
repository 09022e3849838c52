"""The MCP server's pure parts: schemas from OpenAPI, page paths, the token check."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from service.mcp.http import McpEndpoint
from service.mcp.tools import PageArguments, argument_error, page_path, standalone_schema
from service.settings import Settings

OPENAPI: dict[str, Any] = {"components": {"schemas": {
    "Request": {"type": "object", "properties": {
        "turn": {"$ref": "#/components/schemas/Turn"},
        "tree": {"oneOf": [{"$ref": "#/components/schemas/Node"}, {"type": "null"}]},
    }},
    "Turn": {"type": "object", "properties": {"role": {"type": "string"}}},
    "Node": {"type": "object", "properties": {"children": {"items": {"$ref": "#/components/schemas/Node"}}}},
    "Unused": {"type": "object"},
}}}


def test_a_body_schema_becomes_a_self_contained_object_schema() -> None:
    schema = standalone_schema(OPENAPI, {"$ref": "#/components/schemas/Request"})
    assert schema["type"] == "object"  # the root is the component, not a bare $ref
    assert schema["properties"]["turn"] == {"$ref": "#/$defs/Turn"}
    assert set(schema["$defs"]) == {"Turn", "Node"}  # what it reaches, recursion included, nothing else
    assert schema["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert OPENAPI["components"]["schemas"]["Turn"] == {"type": "object", "properties": {"role": {"type": "string"}}}


@pytest.mark.parametrize(("slug", "path"), [
    ("concepts/home", "/documents/concepts/home"),
    ("../admin/flags", "/documents/%2E%2E/admin/flags"),
    ("a b?c#d", "/documents/a%20b%3Fc%23d"),
])
def test_a_slug_is_always_a_path_under_documents(slug: str, path: str) -> None:
    assert page_path(slug) == path


@pytest.mark.parametrize(("arguments", "message"), [
    ({}, "invalid request: `slug`: Object missing required field `slug`"),
    ({"slug": ""}, "invalid request: `slug`: Expected `str` of length >= 1"),
    ({"slug": "x", "page": 2}, "invalid request: `page`: Object contains unknown field `page`"),
])
def test_bad_page_arguments_are_named_as_rest_names_a_bad_field(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(msgspec.ValidationError) as err:
        msgspec.convert(arguments, PageArguments, strict=True)
    assert argument_error(err.value) == message


def _scope(authorization: str | None) -> Any:
    headers = [] if authorization is None else [(b"authorization", authorization.encode("latin-1"))]
    return {"type": "http", "headers": headers}


def test_without_mcp_token_mcp_is_open_like_retrieve() -> None:
    endpoint = McpEndpoint(Settings())
    assert endpoint._refusal(_scope(None)) is None


@pytest.mark.parametrize(("authorization", "refusal"), [
    (None, "missing Authorization header; expected 'Bearer <MCP_TOKEN>'"),
    ("Bearer nope", "invalid MCP token"),
    ("Basic s3cret-token", "invalid MCP token"),
    ("Bearer s3cret-token", None),
    ("bearer  s3cret-token ", None),
])
def test_mcp_token_is_checked(authorization: str | None, refusal: str | None) -> None:
    endpoint = McpEndpoint(Settings(mcp_token="s3cret-token"))
    assert endpoint._refusal(_scope(authorization)) == refusal


def test_dns_rebinding_check_only_while_bound_to_loopback() -> None:
    local = McpEndpoint(Settings(host="127.0.0.1")).sessions.security_settings
    assert local is not None and local.enable_dns_rebinding_protection
    assert "localhost:*" in local.allowed_hosts and "http://127.0.0.1:*" in local.allowed_origins
    assert McpEndpoint(Settings(host="0.0.0.0")).sessions.security_settings is None
