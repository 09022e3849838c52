"""The MCP server end to end, through the official SDK's own client.

Over Streamable HTTP against the real app served by uvicorn on a free port
(its own database, the seed corpus, `MCP_TOKEN` set), and over stdio against
`python -m service mcp` as a desktop agent starts it. Every tool error is
compared with what the REST route answers for the same input, live.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import uvicorn
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from service.db.embedded import free_port
from service.readiness import wait_url_ready
from service.settings import PROJECT_ROOT
from tests.conftest import (
    ADMIN_TOKEN_FOR_TESTS,
    GOLDEN_DIR,
    PgServer,
    _create_database,
    _drop_database,
    app_settings,
    quiet_flags_file,
)

TOKEN = "mcp-test-token-0123456789abcdef"
TOOLS = {"search_docs", "get_context", "get_page"}


class Service:
    def __init__(self, base: str) -> None:
        self.base = base
        self.url = f"{base}/mcp"

    @contextlib.asynccontextmanager
    async def client(self, token: str | None = TOKEN, mode: str = "auto") -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http, Client(
            streamable_http_client(self.url, http_client=http), mode=mode,  # type: ignore[arg-type]
        ) as client:
            yield client

    async def rest(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.base, timeout=120) as http:
            return await http.request(method, path, **kwargs)


@pytest.fixture(scope="module")
async def service(pg_server: PgServer) -> AsyncIterator[Service]:
    from service.app import create_app

    name = await _create_database(pg_server)
    settings = app_settings(pg_server.dsn(name), PROJECT_ROOT / "seeds", mcp_token=TOKEN)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                           lifespan="on", log_config=None, access_log=False))
    serving = asyncio.create_task(server.serve())
    try:
        base = f"http://127.0.0.1:{port}"
        await wait_url_ready(base, timeout_s=240)
        yield Service(base)
    finally:
        server.should_exit = True
        await serving
        await _drop_database(pg_server, name)


def _dialogue(dialogue_id: str) -> list[dict[str, Any]]:
    data = yaml.safe_load((GOLDEN_DIR / "dialogues.yaml").read_text(encoding="utf-8"))
    turns: list[dict[str, Any]] = next(d["turns"] for d in data["dialogues"] if d["id"] == dialogue_id)
    return turns


def _error_text(result: Any) -> str:
    assert result.is_error, result
    assert result.structured_content is None
    text: str = result.content[0].text
    return text


# -- tools and their schemas ---------------------------------------------------------

@pytest.mark.parametrize("mode", ["auto", "legacy"])  # the 2026 protocol, and the handshake desktop agents use
async def test_tools_are_listed_with_the_rest_routes_schemas(service: Service, mode: str) -> None:
    async with service.client(mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    openapi = (await service.rest("GET", "/schema/openapi.json")).json()
    request = openapi["components"]["schemas"]["RetrieveRequest"]
    search = tools["search_docs"].input_schema
    assert search["type"] == "object" and search["required"] == ["query"]
    assert search["properties"]["top_k"] == request["properties"]["top_k"]  # the flag's maximum, published
    assert search["properties"]["top_k"]["maximum"] == 10
    assert search["properties"]["reply_to"]["oneOf"][0] == {"$ref": "#/$defs/ClarificationOut"}
    assert "ClarificationOut" in search["$defs"]
    assert tools["get_context"].input_schema["properties"].keys() == \
        openapi["components"]["schemas"]["ContextRequest"]["properties"].keys()
    assert tools["get_page"].input_schema["required"] == ["slug"]
    assert tools["search_docs"].output_schema["title"] == "RetrieveResponse"
    assert tools["get_page"].annotations.read_only_hint is True


async def test_search_docs_answers_as_retrieve_does(service: Service) -> None:
    body = {"query": "where are my shortcuts?", "top_k": 3}
    async with service.client() as client:
        result = await client.call_tool("search_docs", body)
    assert not result.is_error
    answer = result.structured_content
    assert answer["status"] == "answer" and answer["message"] == ""
    top = answer["results"][0]
    assert top["doc_slug"] == "widgets/quick-links" and "anchor" in top and top["header_path"]
    rest = (await service.rest("POST", "/retrieve", json=body)).json()
    same = ("status", "message", "options", "phase", "confidence")
    assert {k: answer[k] for k in same} == {k: rest[k] for k in same}
    assert [(r["doc_slug"], r["anchor"], r["snippet"]) for r in answer["results"]] == \
        [(r["doc_slug"], r["anchor"], r["snippet"]) for r in rest["results"]]
    assert result.content[0].text.startswith("{")  # the JSON for clients that read text only


async def test_a_clarification_is_answered_through_reply_to(service: Service) -> None:
    # The dialogue is pinned to the seed rules (tests/golden/dialogues.yaml): the default answers
    # "home" at once, so it is played under the policy it is written for.
    turns = _dialogue("home-reply-the-dashboard-one")
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"}
    pinned = await service.rest("PUT", "/admin/flags", json={"name": "decision.policy", "value": "seed_rules"},
                                headers=auth)
    assert pinned.status_code == 200, pinned.text
    try:
        await _play_home_reply(service, turns)
    finally:
        await service.rest("DELETE", "/admin/flags/decision.policy", headers=auth)


async def _play_home_reply(service: Service, turns: list[dict[str, Any]]) -> None:
    async with service.client() as client:
        first = (await client.call_tool("search_docs", {"query": turns[0]["say"]})).structured_content
        assert first["status"] == turns[0]["expect"]["decision"] == "clarify"
        assert first["clarification"] is not None and len(first["options"]) >= 2
        history = [{"role": "user", "content": turns[0]["say"]},
                   {"role": "assistant", "content": first["message"],
                    "doc_slugs": [o["doc_slug"] for o in first["options"]]}]
        reply = await client.call_tool("search_docs", {
            "query": turns[1]["say"], "history": history, "reply_to": first["clarification"],
        })
    second = reply.structured_content
    expect = turns[1]["expect"]
    assert second["status"] == expect["decision"] == "answer"
    assert second["results"][0]["doc_slug"] == expect["top"]
    assert second["conversation"]["topic"] == expect["topic"] == "reply"


async def test_get_context_is_the_budgeted_context(service: Service) -> None:
    async with service.client() as client:
        result = await client.call_tool("get_context", {
            "query": "how do I add a quick link?", "budget": {"total": 600},
            "ui_context": {"screen": "dashboard"},
        })
    assert not result.is_error
    context = result.structured_content
    assert context["total_budget"] == 600 and 0 < context["total_tokens"] <= 600
    assert context["text"] and context["sections"]
    assert "quick" in context["text"].lower()


async def test_get_page_and_the_page_resources(service: Service) -> None:
    async with service.client() as client:
        page = (await client.call_tool("get_page", {"slug": "widgets/quick-links"})).structured_content
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        read = await client.read_resource("docs://page/widgets/quick-links")
    rest = (await service.rest("GET", "/documents/widgets/quick-links")).json()
    assert page == rest
    assert page["sections"] and all(s["anchor"] for s in page["sections"])
    listed = {r.uri: r for r in resources}
    documents = (await service.rest("GET", "/documents")).json()["documents"]
    assert set(listed) == {f"docs://page/{d['slug']}" for d in documents}
    assert listed["docs://page/widgets/quick-links"].title == page["title"]
    assert listed["docs://page/widgets/quick-links"].mime_type == "text/markdown"
    assert templates[0].uri_template == "docs://page/{slug}"
    assert read.contents[0].text == page["content"]


# -- bad arguments: a tool error with REST's words, never a crash --------------------

BAD_SEARCHES = [
    pytest.param({}, id="missing-query"),
    pytest.param({"query": "   "}, id="blank-query"),
    pytest.param({"query": "notes", "top_k": 0}, id="top_k-zero"),
    pytest.param({"query": "notes", "top_k": 99}, id="top_k-over-the-flag"),
    pytest.param({"query": "notes", "top_k": "3"}, id="top_k-a-string"),
    pytest.param({"query": "notes", "shoe_size": 44}, id="unknown-field"),
    pytest.param({"query": "notes", "category": "recipes"}, id="unknown-category"),
    pytest.param({"query": "notes", "history": [{"role": "robot", "content": "hi"}]}, id="bad-history"),
    pytest.param({"query": "home", "reply_to": {"v": 1, "kind": "choose", "query": "home", "options": [],
                                                "issued_at": 0, "signature": "forged"}}, id="forged-reply_to"),
    pytest.param({"query": "x" * 20_000}, id="over-the-body-limit"),
]


@pytest.mark.parametrize("arguments", BAD_SEARCHES)
async def test_bad_search_arguments_are_a_tool_error_with_rests_message(
    service: Service, arguments: dict[str, Any]
) -> None:
    rest = await service.rest("POST", "/retrieve", json=arguments)
    assert 400 <= rest.status_code < 500
    async with service.client() as client:
        result = await client.call_tool("search_docs", arguments)
        assert _error_text(result) == rest.json()["error"]
        after = await client.call_tool("search_docs", {"query": "explain notes"})  # the session goes on
    assert not after.is_error and after.structured_content["results"]


async def test_bad_context_and_page_arguments_are_tool_errors(service: Service) -> None:
    bad_budget = {"query": "notes", "budget": {"total": 0}}
    rest_context = (await service.rest("POST", "/context", json=bad_budget)).json()["error"]
    rest_page = await service.rest("GET", "/documents/no/such-page")
    assert rest_page.status_code == 404
    async with service.client() as client:
        assert _error_text(await client.call_tool("get_context", bad_budget)) == rest_context
        assert _error_text(await client.call_tool("get_context", {})) == \
            "invalid request: `query`: Object missing required field `query`"
        assert _error_text(await client.call_tool("get_page", {"slug": "no/such-page"})) == \
            rest_page.json()["error"] == "no document with slug 'no/such-page'"
        assert _error_text(await client.call_tool("get_page", {})) == \
            "invalid request: `slug`: Object missing required field `slug`"
        assert _error_text(await client.call_tool("get_page", {"slug": 7})) == \
            "invalid request: `slug`: Expected `str`, got `int`"
        # A slug is never a path to resolve: this is a page that does not exist, not /admin.
        assert _error_text(await client.call_tool("get_page", {"slug": "../admin/flags"})) == \
            "no document with slug '../admin/flags'"
        with pytest.raises(MCPError, match="unknown tool 'drop_tables'"):
            await client.call_tool("drop_tables", {})
        with pytest.raises(MCPError, match="no document with slug 'no/such-page'"):
            await client.read_resource("docs://page/no/such-page")
        with pytest.raises(MCPError, match="unknown resource"):
            await client.read_resource("file:///etc/passwd")
        assert (await client.list_tools()).tools  # still serving


# -- MCP_TOKEN --------------------------------------------------------------------

@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"Basic {TOKEN}", "Bearer"])
async def test_mcp_token_is_required(service: Service, authorization: str | None) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    response = await service.rest("POST", "/mcp", json=initialize, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="mcp"'
    assert response.json()["error"] in ("missing Authorization header; expected 'Bearer <MCP_TOKEN>'",
                                        "invalid MCP token")
    good = await service.rest("POST", "/mcp", json=initialize,
                              headers={**headers, "Authorization": f"Bearer {TOKEN}"})
    assert good.status_code == 200 and good.json()["result"]["serverInfo"]["name"] == "docs-retrieval"


async def test_the_sdk_client_without_the_token_is_refused(service: Service) -> None:
    with pytest.raises(BaseExceptionGroup) as refused:  # the SDK's task groups wrap its error
        async with service.client(token=None) as client:
            await client.list_tools()
    assert any(isinstance(e, MCPError) for e in _leaves(refused.value)), refused.value


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


async def test_an_oversized_mcp_body_is_refused_before_parsing(service: Service) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
    response = await service.rest("POST", "/mcp", content=b"{" + b" " * 50_000 + b"}",
                                  headers={**headers, "Content-Type": "application/json"})
    assert response.status_code == 413


# -- stdio --------------------------------------------------------------------------

async def test_stdio_serves_the_tools(pg_server: PgServer, fixture_seeds: Path, tmp_path: Path) -> None:
    name = await _create_database(pg_server)
    env = {k: v for k, v in os.environ.items() if k not in ("ADMIN_TOKEN", "MCP_TOKEN")}
    env.update(DATABASE_URL=pg_server.dsn(name), SEEDS_DIR=str(fixture_seeds), FLAGS_FILE=str(quiet_flags_file()),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(PROJECT_ROOT), LOG_LEVEL="INFO")
    params = StdioServerParameters(command=sys.executable, args=["-m", "service", "mcp"], env=env, cwd=PROJECT_ROOT)
    log = tmp_path / "mcp-stdio.log"
    try:
        with log.open("w") as errlog:
            # mode="legacy": the initialize handshake, as Claude Desktop and most agents connect
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                slug, page = await _when_ready(client)
        assert tools == TOOLS, log.read_text()[-3000:]
        assert page["slug"] == slug and page["content"]
        assert "seed finished" in log.read_text()  # the service's log went to stderr, not into the protocol
    finally:
        await _drop_database(pg_server, name)


async def _when_ready(client: Client, timeout_s: float = 240) -> tuple[str, dict[str, Any]]:
    """A page of the seeded fixture corpus through get_page, polling until start-up has loaded it."""
    async with asyncio.timeout(timeout_s):
        while True:
            resources = (await client.list_resources()).resources
            if resources:
                result = await client.call_tool("get_page", {"slug": resources[0].name})
                assert not result.is_error, result
                page: dict[str, Any] = result.structured_content
                return resources[0].name, page
            await asyncio.sleep(0.2)
