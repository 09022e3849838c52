"""`/mcp`: the MCP server over Streamable HTTP, mounted in the Litestar app.

Stateless JSON responses: every POST carries one JSON-RPC message and gets
one JSON answer, so any replica can serve any call (no session to pin) and a
chat backend needs no SSE. With `MCP_TOKEN` set a request needs
`Authorization: Bearer <MCP_TOKEN>` (401 otherwise, before anything is read).
The body limit lets the largest REST body (`/context`'s) through with its
JSON-RPC envelope; each tool's arguments then meet their own route's limit.
While bound to a loopback address, the SDK's DNS-rebinding check refuses a
foreign `Host` or `Origin` (a web page cannot drive a local service).
"""

from __future__ import annotations

import contextlib
import hmac
import json
from collections.abc import AsyncIterator
from typing import Any

from litestar import Litestar, asgi
from litestar.handlers import ASGIRouteHandler
from litestar.types import HTTPResponseBodyEvent, HTTPResponseStartEvent, Receive, Scope, Send
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from service.mcp.tools import RestBackend, build_server
from service.settings import Settings

PATH = "/mcp"
MAX_BODY_BYTES = 40 * 1024
"""POST /context's 32 KiB plus room for the JSON-RPC envelope around the arguments."""

_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _transport_security(host: str) -> TransportSecuritySettings | None:
    if host not in _LOOPBACK:
        return None  # bound to a public address: which Host names reach it is the operator's choice
    hosts = ["127.0.0.1", "localhost", "[::1]"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *(f"{h}:*" for h in hosts)],
        allowed_origins=[f"{scheme}://{h}{port}" for scheme in ("http", "https") for h in hosts
                         for port in ("", ":*")],
    )


class McpEndpoint:
    """The MCP server bound to the app: a route for `create_app` and a lifespan
    that runs the SDK's session manager while the app runs."""

    def __init__(self, settings: Settings) -> None:
        self._token = settings.mcp_token
        self.backend = RestBackend()
        self.server: Server[Any] = build_server(self.backend)
        self._security = _transport_security(settings.host)
        self.sessions = self._new_sessions()

        async def handle(scope: Scope, receive: Receive, send: Send) -> None:
            problem = self._refusal(scope)
            if problem is not None:
                await _unauthorized(send, problem)
                return
            await self.sessions.handle_request(scope, receive, send)  # type: ignore[arg-type]

        self.route: ASGIRouteHandler = asgi(PATH, copy_scope=True, include_in_schema=False)(handle)

    def _new_sessions(self) -> StreamableHTTPSessionManager:
        return StreamableHTTPSessionManager(
            app=self.server, json_response=True, stateless=True,
            security_settings=self._security, max_request_body_size=MAX_BODY_BYTES,
        )

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Litestar) -> AsyncIterator[None]:
        self.backend.bind(app)
        # The SDK's manager runs once per instance; an app started again (a test client per
        # test, as the API fuzzer does) gets a manager of its own.
        self.sessions = self._new_sessions()
        try:
            async with self.sessions.run():
                yield
        finally:
            await self.backend.aclose()

    def _refusal(self, scope: Scope) -> str | None:
        """Why the request may not use MCP (None: it may)."""
        if not self._token:
            return None
        header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"authorization"), None)
        if header is None:
            return "missing Authorization header; expected 'Bearer <MCP_TOKEN>'"
        scheme, _sep, token = header.strip().partition(" ")
        # Constant-time on the raw bytes, as the admin guard compares its token.
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode("latin-1"), self._token.encode("utf-8")
        ):
            return "invalid MCP token"
        return None


async def _unauthorized(send: Send, message: str) -> None:
    """401 in the service's error shape (`{"error", "detail"}`), with the Bearer challenge."""
    body = json.dumps({"error": message, "detail": None}).encode()
    start: HTTPResponseStartEvent = {"type": "http.response.start", "status": 401, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="mcp"'),
    ]}
    end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": body, "more_body": False}
    await send(start)
    await send(end)
