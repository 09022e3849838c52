"""Wait until a service answers `/ready`: the one helper replay, bench and the tests share.

`/ready` answers 200 once the corpus is loaded; `semantic_ready` says phase 3
can answer too. Callers pass how to GET (an in-memory ASGI client, httpx over
loopback) and, for a child process, how to tell that it died meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

Get = Callable[[str], Awaitable[tuple[int, dict[str, Any]]]]


class ReadyTimeout(TimeoutError):
    """The service did not become ready in time; carries its last `/ready` body."""


def http_get(client: Any) -> Get:
    """A `Get` over an httpx-style async client (httpx.AsyncClient, Litestar's AsyncTestClient)."""

    async def get(path: str) -> tuple[int, dict[str, Any]]:
        response = await client.get(path)
        try:
            body = response.json()
        except ValueError:
            body = {"text": response.text[:200]}
        return response.status_code, body if isinstance(body, dict) else {"body": body}

    return get


async def wait_until_ready(
    get: Get,
    *,
    timeout_s: float,
    semantic: bool = True,
    interval_s: float = 0.1,
    retry_on: tuple[type[BaseException], ...] = (OSError,),
    check_alive: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Poll `/ready` until 200 (and, with `semantic`, phase 3 ready); return its body.

    `retry_on`: errors meaning "not listening yet". `check_alive` raises if the
    service's process is gone, so a crash fails at once instead of at the deadline.
    """
    deadline = time.monotonic() + timeout_s
    last: dict[str, Any] = {}
    while True:
        if check_alive is not None:
            check_alive()
        try:
            status, last = await get("/ready")
        except retry_on as exc:
            last = {"error": repr(exc)}
        else:
            if status == 200 and (last.get("semantic_ready", True) or not semantic):
                return last
        if time.monotonic() >= deadline:
            raise ReadyTimeout(f"service not ready after {timeout_s:.0f} s: {last}")
        await asyncio.sleep(interval_s)


async def wait_url_ready(
    url: str, *, timeout_s: float, semantic: bool = True, check_alive: Callable[[], None] | None = None
) -> dict[str, Any]:
    """`wait_until_ready` against a service listening at `url`."""
    import httpx

    async with httpx.AsyncClient(base_url=url, timeout=5) as client:
        return await wait_until_ready(
            http_get(client), timeout_s=timeout_s, semantic=semantic, interval_s=0.2,
            retry_on=(httpx.TransportError,), check_alive=check_alive,
        )


def wait_url_ready_sync(
    url: str, *, timeout_s: float, semantic: bool = True, check_alive: Callable[[], None] | None = None
) -> dict[str, Any]:
    """The same, for synchronous callers (tests driving a `serve` subprocess)."""
    return asyncio.run(wait_url_ready(url, timeout_s=timeout_s, semantic=semantic, check_alive=check_alive))
