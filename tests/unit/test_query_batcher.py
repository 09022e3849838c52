"""Query micro-batching: own vectors back, bounded delay, per-batch failure, shedding."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from service.embedding.base import Matrix
from service.embedding.batcher import EmbeddingQueueFull, QueryBatcher
from service.ingest.model_thread import on_model_thread

DIM = 4


@dataclass(frozen=True)
class Limits:
    batch_wait_ms: float = 2.0
    batch_max: int = 32
    max_queue_ms: float = 250.0


class FakeModel:
    """Vector of a text = its length and character sums; records every call."""

    model_name = "fake"
    dim = DIM

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.threads: set[int] = set()
        self.fail_on = fail_on

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(list(texts))
        self.threads.add(threading.get_ident())
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("model exploded")
        return np.asarray([[len(t), sum(map(ord, t)), 1, i] for i, t in enumerate(texts)], dtype=np.float32)


def batcher(model: Any, limits: Limits, **kwargs: Any) -> QueryBatcher:
    return QueryBatcher(model, lambda: limits, **kwargs)


async def test_concurrent_queries_share_one_forward_pass_and_each_gets_its_own_row() -> None:
    model = FakeModel()
    b = batcher(model, Limits(batch_wait_ms=50, batch_max=8))
    texts = [f"query number {i}" * (i + 1) for i in range(5)]
    vectors = await asyncio.gather(*(b.embed(t) for t in texts))
    assert model.calls == [texts]  # one call, in arrival order
    for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        assert vector[0] == len(text) and vector[3] == i


async def test_a_full_batch_leaves_without_waiting_and_the_rest_follows() -> None:
    model = FakeModel()
    # A minute of batch_wait_ms: only the batch size can release these in time.
    b = batcher(model, Limits(batch_wait_ms=60_000, batch_max=3))
    done = await asyncio.wait_for(asyncio.gather(*(b.embed(str(i)) for i in range(3))), timeout=10)
    assert len(done) == 3 and model.calls == [["0", "1", "2"]]


async def test_a_lone_query_waits_no_longer_than_the_flag() -> None:
    model = FakeModel()
    b = batcher(model, Limits(batch_wait_ms=0, batch_max=32))
    loop = asyncio.get_running_loop()
    started = loop.time()
    await b.embed("alone")
    immediate = loop.time() - started
    b = batcher(model, Limits(batch_wait_ms=100, batch_max=32))
    started = loop.time()
    await b.embed("alone again")
    waited = loop.time() - started
    assert model.calls[-1] == ["alone again"]
    # Generous upper bound (2 s of slack on a shared machine): a bug that waits
    # for a full batch would hang here until the timeout of wait_for below.
    assert immediate < 2.0 and 0.09 <= waited < 0.1 + 2.0


async def test_a_lone_query_never_waits_for_a_batch_that_will_not_fill() -> None:
    b = batcher(FakeModel(), Limits(batch_wait_ms=20, batch_max=1000))
    assert (await asyncio.wait_for(b.embed("q"), timeout=10))[0] == 1


async def test_a_failing_batch_fails_only_its_own_requests() -> None:
    model = FakeModel(fail_on="boom")
    b = batcher(model, Limits(batch_wait_ms=30, batch_max=2))
    first = await asyncio.gather(b.embed("boom"), b.embed("innocent"), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) and "model exploded" in str(r) for r in first)
    later = await b.embed("later")
    assert later[0] == len("later")
    assert b.stats.failed_batches == 1 and b.stats.batches == 1


async def test_batches_run_on_the_one_model_thread() -> None:
    model = FakeModel()
    b = batcher(model, Limits())
    await asyncio.gather(b.embed("a"), b.embed("b"))
    await b.embed("c")
    model_thread = await on_model_thread(threading.get_ident)
    assert model.threads == {model_thread}


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_query_that_would_wait_too_long_is_refused_at_once() -> None:
    clock = ManualClock()
    release = asyncio.Event()
    blocked: list[int] = []

    async def run(func: Callable[[Sequence[str]], Matrix], texts: Sequence[str]) -> Matrix:
        blocked.append(len(texts))
        if len(blocked) == 1:
            clock.now += 0.1  # the first batch (2 queries) took 100 ms: 50 ms a query
        else:
            await release.wait()
        return func(texts)

    b = batcher(FakeModel(), Limits(batch_wait_ms=0, batch_max=2, max_queue_ms=200), clock=clock, run=run)
    await asyncio.gather(b.embed("m1"), b.embed("m2"))
    # Before anything is queued the expected wait is 0: a query is admitted.
    assert b.expected_wait_ms() == 0
    running = asyncio.ensure_future(b.embed("running"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the drainer started its batch and waits on `release`
    # 50 ms left of the running batch + 2 full batches of 100 ms queued = 250 ms.
    queued = [asyncio.ensure_future(b.embed(f"q{i}")) for i in range(4)]
    await asyncio.sleep(0)
    with pytest.raises(EmbeddingQueueFull, match=r"^embedding queue full: ~250 ms wait > 200 ms$"):
        await b.embed("one too many")
    assert b.stats.shed == 1
    release.set()
    results = await asyncio.gather(running, *queued)
    assert len(results) == 5


async def test_limits_are_read_on_every_call() -> None:
    limits = {"now": Limits(batch_wait_ms=0, batch_max=1)}
    model = FakeModel()
    b = QueryBatcher(model, lambda: limits["now"])
    await asyncio.gather(b.embed("a"), b.embed("b"))
    assert model.calls == [["a"], ["b"]]
    limits["now"] = Limits(batch_wait_ms=50, batch_max=4)
    await asyncio.gather(b.embed("c"), b.embed("d"))
    assert model.calls[-1] == ["c", "d"]


# -- through the pipeline: what a user sees ---------------------------------------
class Recorder:
    def __init__(self) -> None:
        self.samples: list[tuple[str, bool]] = []

    def record(self, tier: str, latency_ms: float, error: bool, database: bool = False) -> None:
        self.samples.append((tier, error))


def pipeline_with(batcher_: QueryBatcher, recorder: Recorder) -> Any:
    from service.flags import Flags
    from service.pipeline import Pipeline, SemanticLeg
    from service.scoring.semantic import QueryEmbeddingCache
    from tests.unit.test_fallback_chain import (
        CHUNK,
        DOC,
        SEEDS,
        Synonyms,
        Tier1Cache,
        load_glossary,
    )

    flags = Flags()

    async def model() -> str:
        return "fake"

    leg = SemanticLeg(embedder=batcher_, cache=QueryEmbeddingCache(0), pool=lambda: object(), model=model)
    pipeline = Pipeline(cache=Tier1Cache(tuple(load_glossary(SEEDS / "core_concepts.yaml"))),
                        synonyms=Synonyms(), flags=lambda: flags, recorder=recorder, semantic=lambda: leg)
    pipeline.load_corpus([DOC], [CHUNK], version=1)
    return pipeline


async def test_requests_of_a_failing_batch_are_answered_by_phase_two() -> None:
    from service.pipeline import RetrieveParams

    recorder = Recorder()
    pipeline = pipeline_with(batcher(FakeModel(fail_on="explain workspace"), Limits(batch_wait_ms=50)), recorder)
    responses = await asyncio.gather(
        pipeline.run_request(RetrieveParams(query="explain workspace")),
        pipeline.run_request(RetrieveParams(query="workspace canvas")),
    )
    for response in responses:
        assert response.phase == 2 and response.status == "answer"
        assert [(s.tier, s.reason) for s in response.fallback_path] == [("phase3", "RuntimeError: model exploded")]
    assert recorder.samples.count(("phase3", True)) == 2


async def test_a_shed_request_says_so_and_is_not_counted_as_a_phase_three_error() -> None:
    from service.pipeline import RetrieveParams

    clock = ManualClock()
    release = asyncio.Event()
    calls: list[int] = []

    async def run(func: Callable[[Sequence[str]], Matrix], texts: Sequence[str]) -> Matrix:
        calls.append(len(texts))
        if len(calls) == 1:
            clock.now += 0.4  # measured: 400 ms for one query
        else:
            await release.wait()
        return func(texts)

    b = batcher(FakeModel(), Limits(batch_wait_ms=0, batch_max=1, max_queue_ms=300), clock=clock, run=run)
    await b.embed("warm-up")
    busy = asyncio.ensure_future(b.embed("in the model now"))
    for _ in range(3):
        await asyncio.sleep(0)
    # 400 ms left of the running batch > 300 ms: the request goes to phase 2 at once.
    recorder = Recorder()
    response = await pipeline_with(b, recorder).run_request(RetrieveParams(query="explain workspace"))
    assert response.phase == 2
    reason = response.fallback_path[0].reason
    assert response.fallback_path[0].tier == "phase3" and reason.startswith("embedding queue full: ~")
    assert reason.endswith(" ms wait > 300 ms")
    assert ("phase3", True) not in recorder.samples
    release.set()
    await busy
