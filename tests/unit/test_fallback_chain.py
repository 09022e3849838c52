"""The fallback chain inside one request: phase 3 → 2 → 1 → Tier-1 cache → generic."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from service.decide import clarify
from service.domain.types import Chunk, Document
from service.flags import Flags, apply_overrides
from service.normalize.lexicon import Synonyms
from service.pipeline import Pipeline, RetrieveParams, SemanticLeg, TierFaults
from service.scoring.semantic import QueryEmbeddingCache
from service.scoring.tier1_cache import Tier1Cache, load_glossary

SEEDS = Path(__file__).resolve().parents[2] / "seeds"
DOC = Document(
    slug="concepts/workspace", category="concepts", title="Workspace", keywords=("canvas",),
    content="A workspace groups notes on a canvas.", content_hash="h",
)
CHUNK = Chunk(
    doc_slug=DOC.slug, category=DOC.category, title=DOC.title, header_path="Workspace > Basics",
    chunk_index=0, content=DOC.content, keywords=DOC.keywords, chunk_hash="c", token_count=8,
)


class BrokenLeg(SemanticLeg):
    async def search(self, text: str, top_k: int, category: str | None, flags: Flags, exact: bool = False) -> Any:
        raise ConnectionError("connection refused")


class SlowLeg(SemanticLeg):
    """Never answers: waits on an event nobody sets, so only the timeout ends phase 3."""

    async def search(self, text: str, top_k: int, category: str | None, flags: Flags, exact: bool = False) -> Any:
        await asyncio.Event().wait()


def _pipeline(
    flags: Flags, loaded: bool = True, *, semantic: SemanticLeg | None = None, **parts: Any,
) -> Pipeline:
    """The pipeline over one page; `parts`: more of what `Pipeline` is built with."""
    cache = Tier1Cache(tuple(load_glossary(SEEDS / "core_concepts.yaml")))
    pipeline = Pipeline(cache=cache, synonyms=Synonyms(), flags=lambda: flags, semantic=lambda: semantic, **parts)
    if loaded:
        pipeline.load_corpus([DOC], [CHUNK], version=1)
    return pipeline


def _leg(cls: type[SemanticLeg]) -> SemanticLeg:
    async def model() -> str:
        return "m"

    return cls(embedder=None, cache=QueryEmbeddingCache(16), pool=lambda: object(), model=model)


async def test_failing_phase_three_falls_back_to_phase_two_in_the_same_request() -> None:
    pipeline = _pipeline(Flags(), semantic=_leg(BrokenLeg))
    response = await pipeline.run_request(RetrieveParams(query="explain workspace"))
    assert response.status == "answer" and response.phase == 2
    assert [(s.tier, s.reason) for s in response.fallback_path] == [("phase3", "database unreachable: connection refused")]
    assert response.results[0].header_path == "Workspace > Basics"


async def test_slow_phase_is_passed_over_after_its_timeout() -> None:
    flags = apply_overrides(Flags(), {"timeouts.phase_ms": 50})
    faults = TierFaults()
    pipeline = _pipeline(flags, semantic=_leg(SlowLeg), faults=faults)
    stalled: list[str] = []

    async def stall_the_machine(tier: str, _ctx: Any) -> None:
        # A busy machine stalls the process longer than the 50 ms budget just as
        # phase 2 starts. Phase 2 is in-memory work that never yields to the event
        # loop, so its timeout cannot fire: the stall must not cost it the answer.
        if tier == "phase2":
            stalled.append(tier)
            time.sleep(0.2)

    faults.before_tier = stall_the_machine
    response = await pipeline.run_request(RetrieveParams(query="explain workspace"))
    assert stalled == ["phase2"]
    assert response.phase == 2 and response.status == "answer"
    assert [(s.tier, s.reason) for s in response.fallback_path] == [("phase3", "timeout after 50 ms")]


async def test_a_phase_timeout_is_a_slow_sample_for_the_kill_switch_not_an_error() -> None:
    # Overload makes phase 3 miss its budget: a burst of that must not trip the
    # error rate at once (only a sustained p95 breach trips, tests/unit/test_kill_switch.py).
    from service.routing.monitor import KillSwitch

    # p95 limit below the budget, as the defaults are (500 ms < 2500 ms).
    flags = apply_overrides(Flags(), {"timeouts.phase_ms": 50, "kill_switch.p95_ms": 40})
    now = [0.0]
    switch = KillSwitch(lambda: flags.kill_switch, clock=lambda: now[0])
    pipeline = _pipeline(flags, semantic=_leg(SlowLeg), recorder=switch, router=switch.route)
    for _ in range(flags.kill_switch.min_samples):
        response = await pipeline.run_request(RetrieveParams(query="explain workspace"))
        assert [(s.tier, s.reason) for s in response.fallback_path] == [("phase3", "timeout after 50 ms")]
        now[0] += 100.0
    window = switch.windows[3]
    assert window.errors == 0 and len(window) == flags.kill_switch.min_samples
    assert all(latency >= 50 for _, latency, *_ in window.samples)
    assert switch.state == "closed" and switch.held > 0  # p95 breached, not (yet) sustained


async def test_without_a_corpus_the_cache_answers_explain_questions() -> None:
    pipeline = _pipeline(Flags(), loaded=False)
    response = await pipeline.run_request(RetrieveParams(query="what is a workspace?"))
    assert response.status == "answer" and response.phase == 0
    assert response.results[0].source == "cache" and response.results[0].doc_slug == "concepts/workspace"
    assert [s.tier for s in response.fallback_path] == ["phase3", "phase2", "phase1"]


async def test_when_every_tier_fails_the_generic_reply_is_given() -> None:
    pipeline = _pipeline(Flags(), loaded=False)
    response = await pipeline.run_request(RetrieveParams(query="open my quick links"))
    assert response.status == "no_match" and response.message == clarify.GENERIC
    assert [s.tier for s in response.fallback_path] == ["phase3", "phase2", "phase1", "cache"]
    # Whatever corpus is served: no question it offers nothing to answer, no area of one app named.
    assert "?" not in response.message and "widgets" not in response.message.lower()


async def test_disabled_retrieval_answers_200_with_the_generic_reply() -> None:
    pipeline = _pipeline(apply_overrides(Flags(), {"enabled": False}))
    response = await pipeline.run_request(RetrieveParams(query="explain workspace"))
    assert response.status == "disabled" and response.message == clarify.GENERIC and response.results == ()
    assert [(s.tier, s.reason) for s in response.fallback_path] == [
        (tier, "flags: retrieval disabled") for tier in ("phase3", "phase2", "phase1")
    ]


async def test_operator_phase_caps_the_client_phase() -> None:
    pipeline = _pipeline(apply_overrides(Flags(), {"phase": 1}), semantic=_leg(BrokenLeg))
    response = await pipeline.run_request(RetrieveParams(query="explain workspace", phase_cap=3))
    # Answered below the caller's phase: the path says the flags capped it.
    assert response.phase == 1
    assert [(s.tier, s.reason) for s in response.fallback_path] == [
        ("phase3", "flags: phase 1"), ("phase2", "flags: phase 1"),
    ]
    within = await pipeline.run_request(RetrieveParams(query="explain workspace", phase_cap=1))
    assert within.phase == 1 and within.fallback_path == ()


class NeighbourLeg(SemanticLeg):
    async def search(self, text: str, top_k: int, category: str | None, flags: Flags, exact: bool = False) -> Any:
        from service.scoring.semantic import SemanticHit

        hit = SemanticHit(
            chunk_id="1", doc_slug=CHUNK.doc_slug, chunk_index=0, category=CHUNK.category,
            title=CHUNK.title, header_path=CHUNK.header_path, chunk_hash=CHUNK.chunk_hash, similarity=0.8,
        )
        return [hit], {"embed_ms": 1.0, "vector_search_ms": 1.0}


async def test_fusion_weights_follow_the_query_type_unless_switched_off() -> None:
    question = RetrieveParams(query="how does the workspace canvas work?")
    pipeline = _pipeline(Flags(), semantic=_leg(NeighbourLeg))
    explain = (await pipeline.run_request(question)).results[0].match_explain or []
    assert "hybrid (semantic): 0.3 × keyword" in explain[-1]
    exact = (await pipeline.run_request(RetrieveParams(query='"workspace canvas"'))).results[0].match_explain or []
    assert "hybrid (exact): 0.7 × keyword" in exact[-1]
    flat = _pipeline(apply_overrides(Flags(), {"fusion.query_type_weights": False, "fusion.weights.default": [0.5, 0.5]}),
                     semantic=_leg(NeighbourLeg))
    explain = (await flat.run_request(question)).results[0].match_explain or []
    assert "0.5 × keyword" in explain[-1] and "0.5 × semantic" in explain[-1]
