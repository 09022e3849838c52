"""Every phase skipped below the caller's is named in `fallback_path`: kill switch, manual kill, flags."""

from __future__ import annotations

from pathlib import Path

from service.domain.outcome import Tier
from service.domain.types import Chunk, Document
from service.flags import Flags, KillSwitchFlags, apply_overrides
from service.normalize.lexicon import Synonyms
from service.pipeline import Pipeline, RetrieveParams
from service.routing.monitor import KillSwitch
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
LIMITS = KillSwitchFlags()  # p95 500 ms, 300 s window, 5 % errors, 20 samples


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _service(flags: Flags, limits: KillSwitchFlags = LIMITS) -> tuple[Pipeline, KillSwitch, FakeClock]:
    clock = FakeClock()
    switch = KillSwitch(lambda: limits, clock=clock)
    cache = Tier1Cache(tuple(load_glossary(SEEDS / "core_concepts.yaml")))
    pipeline = Pipeline(
        cache=cache, synonyms=Synonyms(), flags=lambda: flags, recorder=switch, router=switch.route,
    )
    pipeline.load_corpus([DOC], [CHUNK], version=1)
    return pipeline, switch, clock


def _trip(switch: KillSwitch, clock: FakeClock, tier: Tier, latency_ms: float, error: bool = False) -> None:
    # 4 s apart: 20 samples span 76 s, so a p95 breach is sustained past the
    # 60 s short window (a burst of seconds does not trip, test_kill_switch.py).
    for _ in range(LIMITS.min_samples):
        switch.record(tier, latency_ms, error)
        clock.now += 4000.0


def _path(outcome: object) -> list[tuple[str, str]]:
    return [(s.tier, s.reason) for s in outcome.fallback_path]  # type: ignore[attr-defined]


async def test_a_p95_trip_names_the_trigger_and_the_window_figure() -> None:
    pipeline, switch, clock = _service(Flags())
    _trip(switch, clock, Tier.phase3, latency_ms=612)
    outcome = await pipeline.run_request(RetrieveParams(query="explain workspace"))
    assert outcome.phase == 2 and outcome.status == "answer"
    assert _path(outcome) == [("phase3", "kill switch: p95 612 ms > 500 ms over 300 s (phase 3, 20 samples)")]
    # A caller who asked for phase 2 at most lost nothing: no step.
    within = await pipeline.run_request(RetrieveParams(query="explain workspace", phase_cap=2))
    assert within.phase == 2 and within.fallback_path == ()


REASON = "kill switch: error rate 100.0% > 5.0% over 300 s (phase 3, 20 samples)"


async def test_an_error_rate_trip_takes_the_failing_phase_out_and_says_why() -> None:
    pipeline, switch, clock = _service(Flags())  # error_action: drop_phase
    _trip(switch, clock, Tier.phase3, latency_ms=5, error=True)
    outcome = await pipeline.run_request(RetrieveParams(query="explain workspace"))
    assert outcome.status == "answer" and outcome.phase == 2
    assert _path(outcome) == [("phase3", REASON)]


async def test_an_error_rate_trip_with_error_action_disable_disables_retrieval_and_says_why() -> None:
    pipeline, switch, clock = _service(Flags(), KillSwitchFlags(error_action="disable"))
    _trip(switch, clock, Tier.phase3, latency_ms=5, error=True)
    outcome = await pipeline.run_request(RetrieveParams(query="explain workspace"))
    assert outcome.status == "disabled" and outcome.tier is Tier.generic
    assert _path(outcome) == [("phase3", REASON), ("phase2", REASON), ("phase1", REASON)]


async def test_manual_kill_and_flags_are_named_and_reset_clears_the_path() -> None:
    pipeline, switch, _clock = _service(apply_overrides(Flags(), {"phase": 2}))
    capped = await pipeline.run_request(RetrieveParams(query="explain workspace"))
    assert capped.phase == 2 and _path(capped) == [("phase3", "flags: phase 2")]
    switch.kill("drill")
    killed = await pipeline.run_request(RetrieveParams(query="explain workspace"))
    assert killed.status == "disabled"
    assert _path(killed) == [
        ("phase3", "flags: phase 2"), ("phase2", "kill switch: manual kill (drill)"),
        ("phase1", "kill switch: manual kill (drill)"),
    ]
    switch.reset()
    assert _path(await pipeline.run_request(RetrieveParams(query="explain workspace", phase_cap=2))) == []
