"""One LISTEN connection per replica for a table that every replica mirrors in memory.

The flag overrides and the curations work the same way: a change commits its
rows and a `NOTIFY <channel>` in one transaction; each replica keeps a
dedicated connection LISTENing and re-reads the table when notified. After a
lost connection it reconnects with back-off and re-reads everything (a NOTIFY
sent while nobody listened is gone). A keepalive query notices a silently dead
connection. The request path never waits on any of this.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

log = logging.getLogger(__name__)

KEEPALIVE_S = 5.0
STOP_TIMEOUT_S = 10.0
BACKOFF_START_S = 0.1
BACKOFF_MAX_S = 5.0
CONNECT_TIMEOUT_S = 10.0

Reload = Callable[[Any], Awaitable[None]]


class ChangeListener:
    """Calls `reload(conn)` now, on every NOTIFY on `channel`, and after each reconnect."""

    def __init__(self, channel: str, reload: Reload, *, name: str, keepalive_s: float = KEEPALIVE_S) -> None:
        self.channel = channel
        self.reload = reload
        self.name = name
        self.keepalive_s = keepalive_s
        self.connected = False
        self.server_pid: int | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._retry = asyncio.Event()
        self._dirty = False

    async def start(self, dsn: str) -> None:
        """Load now (a failure is logged: the listener resynchronises when it connects), then listen."""
        try:
            conn = await asyncpg.connect(dsn, timeout=CONNECT_TIMEOUT_S)
            try:
                await self.reload(conn)
            finally:
                await conn.close()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as err:
            log.warning("%s: could not load at start-up: %s", self.name, err)
        if self._task is None:
            self._task = asyncio.create_task(self._listen_forever(dsn), name=f"{self.name}-listener")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            # Bounded: shutdown must finish even if the listener ignored the cancel.
            done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)
            if not done:
                log.error("%s listener did not stop within %.0f s", self.name, STOP_TIMEOUT_S)

    def resubscribe(self) -> None:
        """The database is back (e.g. restarted): reconnect now, not after the back-off."""
        self._retry.set()
        self._wake.set()

    def _on_notify(self, *_args: Any) -> None:
        self._dirty = True
        self._wake.set()

    def _on_lost(self, _conn: Any) -> None:
        self._wake.set()

    async def _listen_forever(self, dsn: str) -> None:
        delay = BACKOFF_START_S
        while True:
            conn: Any = None
            try:
                conn = await asyncpg.connect(dsn, timeout=CONNECT_TIMEOUT_S)
                conn.add_termination_listener(self._on_lost)
                await conn.add_listener(self.channel, self._on_notify)
                self.server_pid = conn.get_server_pid()
                self._dirty = False
                await self.reload(conn)  # resynchronise: anything changed while away
                self.connected = True
                delay = BACKOFF_START_S
                await self._serve(conn)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # lost or refused: reconnect with back-off
                if self.connected:
                    log.warning("%s listener lost its connection (%s); reconnecting", self.name, type(err).__name__)
                else:
                    log.debug("%s listener cannot connect: %s", self.name, err)
            finally:
                self.connected = False
                if conn is not None:
                    conn.terminate()
            self._retry.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._retry.wait()
            delay = min(delay * 2, BACKOFF_MAX_S)

    async def _serve(self, conn: Any) -> None:
        while True:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
            # cancel that arrives as the event is set (a NOTIFY during shutdown),
            # and this loop would then never end.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.keepalive_s):
                    await self._wake.wait()
            self._wake.clear()
            if conn.is_closed():
                raise ConnectionError("LISTEN connection closed")
            if self._dirty:
                self._dirty = False
                await asyncio.wait_for(self.reload(conn), self.keepalive_s)
            else:
                await conn.fetchval("select 1", timeout=self.keepalive_s)


class MirroredTable:
    """A store that mirrors a table in memory through its `listener` (the start/stop/
    resubscribe surface the app wires, written once for the flag and curation stores)."""

    listener: ChangeListener

    async def start(self, dsn: str) -> None:
        """Load the table now (a failure is logged), then keep listening in the background."""
        await self.listener.start(dsn)

    async def stop(self) -> None:
        await self.listener.stop()

    def resubscribe(self) -> None:
        self.listener.resubscribe()

    @property
    def listener_connected(self) -> bool:
        return self.listener.connected
