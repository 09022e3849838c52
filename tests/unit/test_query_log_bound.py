"""The query log's memory bound counts the batch being written: while the database hangs,
new records beyond `query_log.queue_size` are dropped as `queue_full`, and the batch that
fails comes back whole (the bound was queue + one batch before, and the overflow was then
dropped as `db_error` at random, depending on when the write failed)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from service.feedback.log_writer import QueryLogWriter
from service.feedback.records import QueryRecord
from service.flags import Flags, apply_overrides


def record(request_id: str) -> QueryRecord:
    return QueryRecord(
        request_id=request_id, at=0.0, endpoint="retrieve", query="q", question=False, tokens=("q",),
        unknown_tokens=(), corrections=(), phase=1, tier="phase1", status="answer", reason="test",
        confidence=1.0, keyword_matched=True, results=(), options=(), latency_ms=1.0, fallback_path=(),
    )


class HangingDatabase:
    """A pool whose connection attempt waits until released, then fails as a stopped server does."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    @asynccontextmanager
    async def acquire(self, timeout: float | None = None) -> AsyncIterator[Any]:
        self.entered.set()
        await self.release.wait()
        raise ConnectionRefusedError("the database is away")
        yield  # pragma: no cover - never reached


async def test_records_arriving_while_a_batch_is_in_flight_count_against_the_bound() -> None:
    flags = apply_overrides(Flags(), {"query_log.queue_size": 3, "query_log.batch_size": 3})
    database = HangingDatabase()
    writer = QueryLogWriter(lambda: database, lambda: flags)  # type: ignore[arg-type, return-value]
    for i in range(3):
        writer.submit(record(f"r{i}"))
    writing = asyncio.create_task(writer.write_batch())
    await database.entered.wait()
    assert len(writer.queue) == 0 and writer.held == 3  # the batch is off the queue, in flight

    writer.submit(record("late-1"))
    writer.submit(record("late-2"))
    assert writer.dropped["queue_full"] == 2 and writer.held == 3

    database.release.set()
    with pytest.raises(ConnectionRefusedError):
        await writing
    assert [r.request_id for r in writer.queue] == ["r0", "r1", "r2"]  # back, whole, in order
    assert writer.dropped == {"queue_full": 2, "db_error": 0, "error": 0}
