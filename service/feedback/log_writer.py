"""The query log's writer: a bounded in-memory queue drained in batches by one task.

The request path only appends to a deque (`submit`): no I/O, no await. The
background task writes batches with `executemany` (`on conflict do nothing`,
so a batch retried after an ambiguous failure cannot duplicate rows). While
the database is slow or away the queue holds what it can; beyond
`query_log.queue_size` records are dropped and counted, never waited for.
The same task prunes the log by age and row count.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg

from service.feedback.metrics import FeedbackMetrics
from service.feedback.records import QueryRecord
from service.flags import Flags

log = logging.getLogger(__name__)

BACKOFF_START_S = 0.1
BACKOFF_MAX_S = 5.0
PRUNE_EVERY_S = 60.0
STOP_FLUSH_TIMEOUT_S = 2.0
DB_ERRORS = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError)
"""What a database that is away, slow or restarting raises."""

INSERT = """
insert into query_log (request_id, at, endpoint, query, question, tokens, unknown_tokens,
    corrections, phase, tier, status, reason, confidence, keyword_matched, results, options,
    latency_ms, fallback_path, conversation, typed)
values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11, $12, $13, $14, $15::jsonb,
    $16::jsonb, $17, $18::jsonb, $19::jsonb, $20)
on conflict (request_id) do nothing
"""


def _row(r: QueryRecord) -> tuple[Any, ...]:
    return (
        r.request_id, datetime.fromtimestamp(r.at, UTC), r.endpoint, r.query, r.question,
        list(r.tokens), list(r.unknown_tokens), json.dumps(r.corrections_json()), r.phase, r.tier,
        r.status, r.reason, r.confidence, r.keyword_matched, json.dumps(r.results_json(), ensure_ascii=False),
        json.dumps(r.options_json(), ensure_ascii=False), r.latency_ms,
        json.dumps(r.fallback_json(), ensure_ascii=False),
        None if r.conversation is None else json.dumps(r.conversation, ensure_ascii=False),
        r.typed,
    )


class QueryLogWriter:
    def __init__(
        self,
        pool: Callable[[], asyncpg.Pool[Any] | None],
        flags: Callable[[], Flags],
        metrics: FeedbackMetrics | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.pool = pool
        self.flags = flags
        self.metrics = metrics or FeedbackMetrics(None)
        self.clock = clock
        self.queue: deque[QueryRecord] = deque()
        self.written = 0
        self.dropped: dict[str, int] = {"queue_full": 0, "db_error": 0, "error": 0}
        self.last_error: str | None = None
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._writing: set[str] = set()
        """Request ids of the batch being written (taken off the queue, not yet committed)."""
        self._task: asyncio.Task[None] | None = None
        self._last_prune = 0.0

    # -- the request path ---------------------------------------------------------
    def submit(self, record: QueryRecord) -> None:
        """Queue one record (never blocks, never raises for a full queue)."""
        settings = self.flags().query_log
        if not settings.enabled:
            return
        if self.held >= settings.queue_size:
            self._drop("queue_full", 1)
            return
        self.queue.append(record)
        if len(self.queue) >= settings.batch_size:
            self._wake.set()

    @property
    def held(self) -> int:
        """Records in memory: queued, plus the batch being written (it returns to the queue
        if the write fails, so it counts against `queue_size` too)."""
        return len(self.queue) + len(self._writing)

    def pending(self, request_id: str) -> bool:
        """Queued, or in the batch being written right now (popped, not yet committed)."""
        return request_id in self._writing or any(r.request_id == request_id for r in self.queue)

    def _drop(self, reason: str, count: int) -> None:
        self.dropped[reason] += count
        self.metrics.dropped(reason, count)

    # -- writing ------------------------------------------------------------------
    async def write_batch(self) -> int:
        """Write up to one batch; on a database error put it back (bounded) and raise."""
        async with self._lock:
            settings = self.flags().query_log
            batch: list[QueryRecord] = []
            while self.queue and len(batch) < settings.batch_size:
                batch.append(self.queue.popleft())
            if not batch:
                return 0
            self._writing = {r.request_id for r in batch}
            try:
                pool = self.pool()
                if pool is None:
                    raise ConnectionError("database pool is not available")
                timeout = self.flags().timeouts.db_ms / 1000
                async with pool.acquire(timeout=timeout) as conn:
                    await conn.executemany(INSERT, [_row(r) for r in batch], timeout=timeout * 5)
            except DB_ERRORS:
                room = max(0, settings.queue_size - len(self.queue))
                kept = batch[:room]
                self.queue.extendleft(reversed(kept))
                self._drop("db_error", len(batch) - len(kept))
                raise
            except Exception:  # a record the database refuses: retrying cannot help
                self._drop("error", len(batch))
                raise
            finally:
                self._writing = set()
            self.written += len(batch)
            self.metrics.written(len(batch))
            return len(batch)

    async def flush(self) -> None:
        """Write everything queued now (feedback on a just-answered request; shutdown).
        Waits for a batch already being written: its rows are committed on return."""
        while self.queue:
            await self.write_batch()
        async with self._lock:  # an in-flight batch (queue already empty) has finished
            pass

    async def prune(self, now: float | None = None) -> int:
        """Delete rows older than `retention_days` and beyond the newest `retention_rows`."""
        pool = self.pool()
        if pool is None:
            return 0
        settings = self.flags().query_log
        cutoff = datetime.fromtimestamp((now if now is not None else self.clock())
                                        - settings.retention_days * 86400, UTC)
        async with pool.acquire() as conn, conn.transaction():
            aged = await conn.execute("delete from query_log where at < $1", cutoff)
            excess = await conn.execute(
                "delete from query_log where request_id in (select request_id from query_log"
                " order by at desc, request_id desc offset $1)", settings.retention_rows,
            )
        return int(aged.split()[-1]) + int(excess.split()[-1])

    # -- the background task ------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="query-log-writer")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        try:  # what is still queued, if the database answers quickly
            async with asyncio.timeout(STOP_FLUSH_TIMEOUT_S):
                await self.flush()
        except (*DB_ERRORS, asyncio.CancelledError):
            pass
        if self.queue:
            self._drop("db_error", len(self.queue))
            self.queue.clear()

    async def _run(self) -> None:
        delay = BACKOFF_START_S
        while True:
            interval = self.flags().query_log.flush_interval_ms / 1000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush()
                if self.clock() - self._last_prune >= PRUNE_EVERY_S:
                    self._last_prune = self.clock()
                    await self.prune()
                delay = BACKOFF_START_S
                self.last_error = None
            except asyncio.CancelledError:
                raise
            except Exception as err:  # keep the queue; try again after a back-off
                self.last_error = f"{type(err).__name__}: {err}"
                log.warning("query log: write failed (%s); %d queued", self.last_error, len(self.queue))
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX_S)

    def describe(self) -> dict[str, Any]:
        return {"queued": len(self.queue), "written": self.written, "dropped": dict(self.dropped),
                "last_error": self.last_error}
