"""A changed database timeout is probed at once, not after the supervisor's back-off."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from service.db.supervisor import DatabaseSupervisor

PROBE_TAKES_S = 0.05
WATCH_INTERVAL_S = 60.0  # far longer than the test waits: only `recheck` can trigger a probe
DEADLINE_S = 10.0


class SlowPool:
    """Answers the probe query after PROBE_TAKES_S, like a server under a little load."""

    probes = 0

    async def fetchval(self, sql: str) -> Any:
        self.probes += 1
        await asyncio.sleep(PROBE_TAKES_S)
        return 1


async def _until(state: str, supervisor: DatabaseSupervisor) -> None:
    started = time.monotonic()
    while supervisor.state != state:
        assert time.monotonic() - started < DEADLINE_S, f"still {supervisor.state}, not {state}"
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def watching(timeout_ms: Callable[[], int]) -> AsyncIterator[tuple[DatabaseSupervisor, SlowPool]]:
    """A supervisor of a database that is up, its watch running until the block ends."""
    supervisor = DatabaseSupervisor(embedded=None, dsn="postgresql://unused", timeout_ms=timeout_ms,
                                    interval_s=WATCH_INTERVAL_S)
    pool = SlowPool()
    supervisor.pool = pool  # type: ignore[assignment]
    supervisor.state = "up"
    watcher = asyncio.create_task(supervisor.watch())
    try:
        yield supervisor, pool
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)


async def test_mending_a_too_short_timeout_brings_the_database_back_without_waiting() -> None:
    timeout_ms = 1  # shorter than the probe: every probe times out
    async with watching(lambda: timeout_ms) as (supervisor, _pool):
        supervisor.recheck()
        await _until("down", supervisor)
        assert supervisor.not_ready_reason() == "database down: database timeout after 1 ms"

        timeout_ms = 2000
        supervisor.recheck()
        await _until("up", supervisor)
        assert supervisor.not_ready_reason() is None


async def test_one_recheck_is_one_probe_then_the_watch_keeps_its_interval() -> None:
    async with watching(lambda: 1) as (supervisor, pool):
        await asyncio.sleep(6 * PROBE_TAKES_S)
        assert pool.probes == 0 and supervisor.state == "up"
        supervisor.recheck()
        await _until("down", supervisor)
        await asyncio.sleep(6 * PROBE_TAKES_S)  # room for several probes: only one may run
        assert pool.probes == 1
