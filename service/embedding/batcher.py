"""Micro-batching of query embeddings, with load shedding.

Queries that wait for the model are embedded together in one forward pass:
the batch leaves when `batch_max` queries are waiting or when its oldest has
waited `batch_wait_ms` (a lone query on an idle model waits exactly that, no
more), or when the model comes free after a longer batch. All model work runs
on the one model thread (service/ingest/model_thread.py). Each caller gets its
own row back; an exception fails only the requests of that batch, whose
phase 3 then falls back to phase 2.

Backpressure: the expected wait of a new query (what is left of the running
batch plus the full batches queued before it, from a moving average of
measured batch times) above `max_queue_ms` refuses it at once with
`EmbeddingQueueFull`, so its request is answered by phase 2 now instead of
joining a queue that would push every later request past its deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from service.embedding.base import Matrix, Vector
from service.ingest.model_thread import on_model_thread

Clock = Callable[[], float]
RunOnModel = Callable[[Callable[[Sequence[str]], Matrix], Sequence[str]], Awaitable[Matrix]]

# Weight of the newest batch in the moving averages of batch time and size.
EWMA_ALPHA = 0.2


class EmbeddingQueueFull(RuntimeError):
    """The query's embedding would wait too long: answer from phase 2 now."""


class BatchEmbedder(Protocol):
    model_name: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> Matrix: ...


@dataclass
class _Waiting:
    text: str
    future: asyncio.Future[Vector]
    arrived: float


class Limits(Protocol):
    """The `embedding` flags the batcher reads (EmbeddingFlags has them)."""

    @property
    def batch_wait_ms(self) -> float: ...

    @property
    def batch_max(self) -> int: ...

    @property
    def max_queue_ms(self) -> float: ...


@dataclass
class BatchStats:
    batches: int = 0
    queries: int = 0
    shed: int = 0
    failed_batches: int = 0
    largest: int = 0


async def _on_model_thread(func: Callable[[Sequence[str]], Matrix], texts: Sequence[str]) -> Matrix:
    return await on_model_thread(func, texts)


class QueryBatcher:
    """Collects concurrent `embed` calls into `embed_queries` calls."""

    def __init__(
        self,
        embedder: BatchEmbedder,
        limits: Callable[[], Limits],
        *,
        clock: Clock = time.monotonic,
        run: RunOnModel = _on_model_thread,
    ) -> None:
        self.embedder = embedder
        self.model_name = embedder.model_name
        self.dim = embedder.dim
        self._limits = limits
        self._clock = clock
        self._run = run
        self._waiting: list[_Waiting] = []
        self._wake = asyncio.Event()
        self._drainer: asyncio.Task[None] | None = None
        self._running_since: float | None = None
        self._running_size = 0
        self._batch_ms: float | None = None  # moving averages of measured batches
        self._batch_size = 1.0
        self.stats = BatchStats()

    @property
    def wait_s(self) -> float:
        return max(0.0, self._limits().batch_wait_ms) / 1000

    @property
    def max_batch(self) -> int:
        return max(1, self._limits().batch_max)

    # -- public -------------------------------------------------------------
    async def embed(self, text: str) -> Vector:
        """This query's vector, computed in a batch with whatever else is waiting."""
        wait, limit = self.expected_wait_ms(), self._limits().max_queue_ms
        if wait > limit:
            self.stats.shed += 1
            raise EmbeddingQueueFull(f"embedding queue full: ~{wait:.0f} ms wait > {limit:g} ms")
        future: asyncio.Future[Vector] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Waiting(text, future, self._clock()))
        if len(self._waiting) >= self.max_batch:
            self._wake.set()
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain(), name="query-batcher")
        return await future

    def expected_wait_ms(self) -> float:
        """What is left of the running batch + the full batches queued ahead."""
        if self._batch_ms is None:
            return 0.0  # nothing measured yet: never refuse blind
        per_query = self._batch_ms / max(self._batch_size, 1.0)
        wait = 0.0
        if self._running_since is not None:
            expected = per_query * max(self._running_size, 1)
            wait += max(0.0, expected - (self._clock() - self._running_since) * 1000)
        full_batches_ahead = len(self._waiting) // self.max_batch
        wait += full_batches_ahead * per_query * self.max_batch
        return wait

    # -- internals ----------------------------------------------------------
    async def _drain(self) -> None:
        while self._waiting:
            deadline = self._waiting[0].arrived + self.wait_s
            while len(self._waiting) < self.max_batch and (left := deadline - self._clock()) > 0:
                self._wake.clear()
                try:  # a timer, not `wait_for`'s extra task per batch (event-loop time)
                    async with asyncio.timeout(left):
                        await self._wake.wait()
                except TimeoutError:
                    break
            batch = [w for w in self._waiting[: self.max_batch] if not w.future.done()]
            del self._waiting[: self.max_batch]
            if batch:
                await self._embed_batch(batch)

    async def _embed_batch(self, batch: list[_Waiting]) -> None:
        self._running_since, self._running_size = self._clock(), len(batch)
        started = self._running_since
        try:
            vectors = await self._run(self.embedder.embed_queries, [w.text for w in batch])
            if len(vectors) != len(batch):
                raise RuntimeError(f"model returned {len(vectors)} vectors for {len(batch)} queries")
        except Exception as exc:  # fails this batch's requests only (phase 2 answers them)
            self.stats.failed_batches += 1
            for w in batch:
                if not w.future.done():
                    w.future.set_exception(exc)
            return
        finally:
            self._running_since = None
        self._observe(len(batch), (self._clock() - started) * 1000)
        for w, vector in zip(batch, vectors, strict=True):
            if not w.future.done():  # a caller that timed out is gone
                row: Vector = np.array(vector, dtype=np.float32)
                w.future.set_result(row)

    def _observe(self, size: int, ms: float) -> None:
        self.stats.batches += 1
        self.stats.queries += size
        self.stats.largest = max(self.stats.largest, size)
        if self._batch_ms is None:
            self._batch_ms, self._batch_size = ms, float(size)
        else:
            self._batch_ms += EWMA_ALPHA * (ms - self._batch_ms)
            self._batch_size += EWMA_ALPHA * (size - self._batch_size)
