"""The MCP tools and resources, answered by the app's own REST routes in process.

A tool call is the REST request it mirrors, sent to the Litestar app through
httpx's ASGI transport (no socket): `search_docs` is `POST /retrieve`,
`get_context` is `POST /context`, `get_page` is `GET /documents/{slug}`. So a
tool validates, limits and fails exactly as REST does: a 4xx becomes a tool
result with `isError` whose text is REST's `error`, word for word. The tools'
input and output schemas are the request and response schemas of those routes
in the served OpenAPI document (flag-bound limits such as `top_k`'s maximum
included), and every page of the loaded corpus is a `docs://page/<slug>`
resource.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Annotated, Any, cast
from urllib.parse import quote, unquote

import httpx
import msgspec
from litestar import Litestar
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)

log = logging.getLogger(__name__)

SERVER_NAME = "docs-retrieval"
PAGE_URI = "docs://page/"
PAGE_MIME_TYPE = "text/markdown"
OPENAPI_PATH = "/schema/openapi.json"
INTERNAL_ERROR_TEXT = "internal server error"
"""What REST answers for a 500 (service/api/errors.py); a tool says no more."""

_COMPONENTS = "#/components/schemas/"
_DEFS = "#/$defs/"
_BASE_URL = "http://mcp.internal"  # in process: the host is never resolved

INSTRUCTIONS = (
    "Search the product's user documentation. Call search_docs with the user's message; "
    "when its status is `clarify`, ask the user the `message`, then call search_docs again "
    "with their answer as `query` and the returned `clarification` unchanged as `reply_to`. "
    "get_context returns a token-budgeted context for writing an answer; get_page returns a "
    "whole page by slug (also readable as the resource docs://page/<slug>)."
)


@dataclass(frozen=True)
class ToolRoute:
    """An MCP tool and the REST operation that answers it."""

    name: str
    title: str
    method: str
    path: str
    """The operation's path in the OpenAPI document."""
    description: str


SEARCH_DOCS = ToolRoute(
    name="search_docs", title="Search the documentation", method="post", path="/retrieve",
    description=(
        "Answer a chat message with the documentation (POST /retrieve). Returns the decision "
        "`status` (answer | clarify | no_match | disabled), the `message` to show, the `options` "
        "to offer and the evidence `results` (page, section `header_path`, `anchor`, snippet, "
        "score). Pass earlier turns as `history` and the screen as `ui_context`; when `status` is "
        "clarify, send the user's answer as `query` with the returned `clarification` unchanged "
        "as `reply_to`."
    ),
)
GET_CONTEXT = ToolRoute(
    name="get_context", title="Budgeted context for an LLM", method="post", path="/context",
    description=(
        "The same retrieval as search_docs, assembled into a token-budgeted context for an LLM "
        "(POST /context): core concepts, the documentation passages, UI state and recent "
        "messages, in `text`, at most `total_budget` tokens; `sections` and `dropped` say what "
        "went in and what did not fit."
    ),
)
GET_PAGE = ToolRoute(
    name="get_page", title="One documentation page", method="get", path="/documents/{slug}",
    description=(
        "One documentation page by slug (GET /documents/{slug}): title, category, summary, "
        "its Markdown `content`, keywords and section tree (titles and `anchor`s)."
    ),
)
TOOLS = (SEARCH_DOCS, GET_CONTEXT, GET_PAGE)

PAGE_ARGUMENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"slug": {
        "type": "string", "minLength": 1, "maxLength": 200,
        "description": "a page's slug, e.g. `concepts/home` (`doc_slug` in search_docs results)",
    }},
    "required": ["slug"],
    "additionalProperties": False,
}


class PageArguments(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """get_page's arguments (the path parameter REST takes from the URL)."""

    slug: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class RestReply(msgspec.Struct, frozen=True):
    status: int
    text: str
    payload: Any
    """The decoded JSON body (None when the body is not JSON)."""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def error(self) -> str:
        """REST's `error` text (service/api/errors.py's body), else the status line."""
        if isinstance(self.payload, dict) and isinstance(self.payload.get("error"), str):
            return str(self.payload["error"])
        return f"HTTP {self.status}: {self.text[:200]}"


def _not_in_process(record: logging.LogRecord) -> bool:
    """httpx logs every request at INFO; the in-process ones would double the query log."""
    args = record.args if isinstance(record.args, tuple) else ()
    return not (len(args) > 1 and str(args[1]).startswith(_BASE_URL))


class RestBackend:
    """The Litestar app's routes, called in process as a REST client would call them."""

    def __init__(self) -> None:
        self._client: httpx.AsyncClient | None = None

    def bind(self, app: Litestar) -> None:
        """Called once the app is running (its lifespan, or the stdio server's)."""
        httpx_log = logging.getLogger("httpx")
        if _not_in_process not in httpx_log.filters:
            httpx_log.addFilter(_not_in_process)
        self._client = httpx.AsyncClient(
            # Litestar types its ASGI messages as TypedDicts, httpx as plain mappings: the same protocol.
            transport=httpx.ASGITransport(app=cast("Any", app)), base_url=_BASE_URL, trust_env=False,
            timeout=None,  # the pipeline's own timeouts bound a request
        )

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def request(self, method: str, path: str, body: Any = None) -> RestReply:
        if self._client is None:
            raise RuntimeError("the MCP server is not bound to a running app")
        content = None if body is None else msgspec.json.encode(body)
        headers = {} if content is None else {"content-type": "application/json"}
        response = await self._client.request(method, path, content=content, headers=headers)
        try:
            payload = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            payload = None
        return RestReply(status=response.status_code, text=response.text, payload=payload)

    async def openapi(self) -> dict[str, Any]:
        reply = await self.request("get", OPENAPI_PATH)
        if not reply.ok or not isinstance(reply.payload, dict):
            raise RuntimeError(f"the OpenAPI document is unavailable: {reply.error()}")
        return reply.payload


def page_path(slug: str) -> str:
    # Dots encoded too: "../admin" must stay a slug, never become a path segment to resolve.
    return "/documents/" + quote(slug, safe="/").replace(".", "%2E")


def argument_error(err: msgspec.ValidationError) -> str:
    """A bad get_page argument in REST's words for a bad body field ("invalid request: `f`: …")."""
    text = str(err)
    at = re.search(r" - at `\$\.([^`]+)`$", text)
    named = re.search(r"field `([^`]+)`", text)
    field = at[1] if at else named[1] if named else "(body)"
    return f"invalid request: `{field}`: {text[: at.start()] if at else text}"


# -- schemas ------------------------------------------------------------------

def _rewrite_refs(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: (_DEFS + value[len(_COMPONENTS):]
                      if key == "$ref" and isinstance(value, str) and value.startswith(_COMPONENTS)
                      else _rewrite_refs(value))
                for key, value in node.items()}
    if isinstance(node, list):
        return [_rewrite_refs(item) for item in node]
    return node


def _referenced(node: Any, components: Mapping[str, Any], found: dict[str, Any]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_COMPONENTS):
            name = ref[len(_COMPONENTS):]
            if name not in found and name in components:
                found[name] = components[name]
                _referenced(components[name], components, found)
        for value in node.values():
            _referenced(value, components, found)
    elif isinstance(node, list):
        for item in node:
            _referenced(item, components, found)


def standalone_schema(openapi: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAPI body schema as a self-contained JSON Schema object: the component a bare
    `$ref` names becomes the root (MCP wants `type: object` there), and every component it
    reaches is kept under `$defs`."""
    components: Mapping[str, Any] = openapi.get("components", {}).get("schemas", {})
    root: Any = schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_COMPONENTS) and len(schema) == 1:
        root = components[ref[len(_COMPONENTS):]]
    found: dict[str, Any] = {}
    _referenced(root, components, found)
    out: dict[str, Any] = _rewrite_refs(root)
    if found:
        out["$defs"] = {name: _rewrite_refs(component) for name, component in found.items()}
    return out


def _json_body_schema(content: Mapping[str, Any]) -> Mapping[str, Any]:
    schema: Mapping[str, Any] = content["content"]["application/json"]["schema"]
    return schema


def tool_of(route: ToolRoute, openapi: Mapping[str, Any]) -> Tool:
    operation = openapi["paths"][route.path][route.method]
    input_schema = (PAGE_ARGUMENTS_SCHEMA if route is GET_PAGE
                    else standalone_schema(openapi, _json_body_schema(operation["requestBody"])))
    return Tool(
        name=route.name, title=route.title, description=route.description,
        input_schema=input_schema,
        output_schema=standalone_schema(openapi, _json_body_schema(operation["responses"]["200"])),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )


# -- the server -----------------------------------------------------------------

def _result(reply: RestReply) -> CallToolResult:
    if reply.ok:
        return CallToolResult(content=[TextContent(text=reply.text)], structured_content=reply.payload)
    return CallToolResult(content=[TextContent(text=reply.error())], is_error=True)


async def call_tool(backend: RestBackend, name: str, arguments: dict[str, Any]) -> CallToolResult:
    """One tool call as its REST request; REST's 4xx (and 5xx) text as a tool error."""
    if name == GET_PAGE.name:
        try:
            page = msgspec.convert(arguments, PageArguments, strict=True)
        except msgspec.ValidationError as err:
            return CallToolResult(content=[TextContent(text=argument_error(err))], is_error=True)
        return _result(await backend.request("get", page_path(page.slug.strip("/"))))
    route = next(r for r in TOOLS if r.name == name)
    return _result(await backend.request(route.method, route.path, arguments))


def build_server(backend: RestBackend) -> Server[Any]:
    """The low-level SDK server (its arguments are checked by REST, not by the SDK)."""
    names = {route.name for route in TOOLS}

    async def list_tools(_ctx: ServerRequestContext[Any], _params: PaginatedRequestParams | None) -> ListToolsResult:
        openapi = await backend.openapi()
        return ListToolsResult(tools=[tool_of(route, openapi) for route in TOOLS])

    async def on_call_tool(_ctx: ServerRequestContext[Any], params: CallToolRequestParams) -> CallToolResult:
        if params.name not in names:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}; tools: {', '.join(sorted(names))}")
        try:
            return await call_tool(backend, params.name, dict(params.arguments or {}))
        except Exception:  # a bug must not end the session: the caller gets REST's 500 text
            log.exception("MCP tool %s failed", params.name)
            return CallToolResult(content=[TextContent(text=INTERNAL_ERROR_TEXT)], is_error=True)

    async def list_resources(
        _ctx: ServerRequestContext[Any], _params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        reply = await backend.request("get", "/documents")
        if not reply.ok:
            raise MCPError(INVALID_PARAMS, reply.error())
        return ListResourcesResult(resources=[
            Resource(uri=PAGE_URI + quote(doc["slug"], safe="/"), name=doc["slug"], title=doc["title"],
                     description=doc["summary"] or None, mime_type=PAGE_MIME_TYPE)
            for doc in reply.payload["documents"]
        ])

    async def list_templates(
        _ctx: ServerRequestContext[Any], _params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=[ResourceTemplate(
            uri_template=PAGE_URI + "{slug}", name="page", title="A documentation page",
            description="A page of the documentation by slug, as Markdown", mime_type=PAGE_MIME_TYPE,
        )])

    async def read_resource(_ctx: ServerRequestContext[Any], params: ReadResourceRequestParams) -> ReadResourceResult:
        if not params.uri.startswith(PAGE_URI) or len(params.uri) == len(PAGE_URI):
            raise MCPError(INVALID_PARAMS, f"unknown resource {params.uri!r}: pages are {PAGE_URI}<slug>")
        reply = await backend.request("get", page_path(unquote(params.uri[len(PAGE_URI):]).strip("/")))
        if not reply.ok:
            raise MCPError(INVALID_PARAMS, reply.error())
        return ReadResourceResult(contents=[
            TextResourceContents(uri=params.uri, mime_type=PAGE_MIME_TYPE, text=reply.payload["content"]),
        ])

    return Server(
        SERVER_NAME, version=_version(), title="Documentation retrieval", instructions=INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=on_call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read_resource,
    )


def _version() -> str:
    try:
        return metadata.version("doc-retrieval-service")
    except metadata.PackageNotFoundError:
        return ""
