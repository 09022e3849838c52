"""`python -m service mcp`: the MCP server on stdin/stdout, for desktop agents.

The agent starts the process and speaks MCP on its pipes. The app's resources
start as under `serve` (database, migrations, seed, corpus, model: the app's
lifespan), but no HTTP server is bound: the tools call the app's routes in
process, as `/mcp` does. While serving, the SDK points file descriptor 1 at
stderr, so logs, a child process (the embedded PostgreSQL) or a stray print
can never corrupt the protocol on stdout; the process ends when the agent
closes stdin, or on SIGTERM / SIGINT, and stops the database first.
"""

from __future__ import annotations

import signal

import anyio
from litestar import Litestar
from mcp.server.stdio import stdio_server

from service.mcp.tools import RestBackend, build_server


async def serve_stdio(app: Litestar) -> None:
    backend = RestBackend()
    server = build_server(backend)
    async with stdio_server() as (read_stream, write_stream), app.lifespan():
        backend.bind(app)
        try:
            async with anyio.create_task_group() as tasks:

                async def stop_on_signal() -> None:
                    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                        async for _signal in signals:
                            tasks.cancel_scope.cancel()  # unwinds the lifespan: the database stops
                            return

                tasks.start_soon(stop_on_signal)
                await server.run(read_stream, write_stream, server.create_initialization_options())
                tasks.cancel_scope.cancel()  # stdin closed: the agent is gone
        finally:
            await backend.aclose()


def run_stdio(app: Litestar) -> int:
    anyio.run(serve_stdio, app)
    return 0
