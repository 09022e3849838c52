"""The evaluation path and the service path decide identically.

`eval-decisions` runs every labelled case through the service's own `Pipeline.run`, and
`fit-decisions` replays the `Decider`'s calibrated routing on the signals a seed-rules run
recorded (`decider.replayed_status`) to choose its operating points without running the service
again. If the replay drifted from the `Decider`, the points a fit chose would describe a policy
the service does not run. Here both paths decide every case of the seed corpus's labelled set
at phases 1 and 2 (in memory; phase 3 needs the database) and must agree on the status, the
page answered with and the options offered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from service.decide.decider import (
    CALIBRATION_FILE,
    PORTABLE_CALIBRATION_FILE,
    Decider,
    load_calibration,
    replayed_status,
)
from service.evaluation.decisions import calibrated_p, policy_flags, run_case
from service.evaluation.labelled import load_query_set
from service.flags import Flags
from service.ingest.seeder import SeedOptions, default_chunker, prepare
from service.wiring import make_pipeline

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "seeds"
LABELLED = ROOT / "bench" / "queries" / "seed.yaml"


@pytest.mark.parametrize("phase", [1, 2])
async def test_the_fit_replay_decides_every_labelled_case_as_the_service_does(phase: int) -> None:
    model, problem = load_calibration(CALIBRATION_FILE)
    assert model is not None, problem
    flags = Flags()
    documents, chunks, _ = prepare(SEEDS, default_chunker(flags.chunking.max_tokens), SeedOptions.from_flags(flags))
    decider = Decider(own=model)
    pipeline = make_pipeline(SEEDS, lambda: flags, decider=decider)
    pipeline.load_corpus(documents, chunks, 1)
    assert decider.active_calibration() is model, "the shipped fit was made on other pages: refit"
    point = model.points(flags.decision).at(phase)

    disagreements = []
    cases = load_query_set(LABELLED)
    for case in cases:
        seed_run = await run_case(pipeline, policy_flags(flags, "seed_rules"), case, phase, "seed_rules")
        service = await run_case(pipeline, policy_flags(flags, "calibrated"), case, phase, "calibrated")
        status, shown, options = replayed_status(seed_run, calibrated_p(model, seed_run), point)
        replayed = (status, shown[:1] if status == "answer" else (), options)
        served = (service.status, service.shown[:1] if service.status == "answer" else (), service.options)
        if replayed != served:
            disagreements.append((case.id, case.query, replayed, served))
    assert len(cases) > 400
    assert disagreements == []


async def test_on_a_corpus_with_stubs_the_portable_fit_s_replay_decides_as_the_service_does() -> None:
    """Logseq's docs hold 43 stub pages ("Right sidebar": only `type::`); under the portable fit an
    answer led by one gives way to a page with content in the service and in the replay alike."""
    model, problem = load_calibration(PORTABLE_CALIBRATION_FILE)
    assert model is not None, problem
    corpus = ROOT / "tests" / "corpora" / "logseq-docs"
    flags = Flags()
    documents, chunks, _ = prepare(corpus, default_chunker(flags.chunking.max_tokens), SeedOptions.from_flags(flags))
    decider = Decider(portable=model)
    pipeline = make_pipeline(corpus, lambda: flags, decider=decider)
    pipeline.load_corpus(documents, chunks, 1)
    assert decider.active_calibration() is model
    point = model.points(flags.decision).at(2)

    disagreements, stub_led = [], 0
    for case in load_query_set(ROOT / "bench" / "queries" / "logseq.yaml"):
        seed_run = await run_case(pipeline, policy_flags(flags, "seed_rules"), case, 2, "seed_rules")
        service = await run_case(pipeline, policy_flags(flags, "calibrated"), case, 2, "calibrated")
        status, shown, options = replayed_status(seed_run, calibrated_p(model, seed_run), point)
        stub_led += status == "answer" and seed_run.ranked[:1] != shown[:1]
        replayed = (status, shown[:1] if status == "answer" else (), options)
        served = (service.status, service.shown[:1] if service.status == "answer" else (), service.options)
        if replayed != served:
            disagreements.append((case.id, case.query, replayed, served))
    assert stub_led >= 1, "no answer led by a stub: the case this test is about did not occur"
    assert disagreements == []
