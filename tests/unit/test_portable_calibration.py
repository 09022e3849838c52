"""A corpus with no fit of its own: `decision.policy: calibrated` uses the portable fit, with
the points chosen with it, and /ready's problem line says so."""

from __future__ import annotations

from service.decide.calibration import (
    FEATURES,
    MODEL_FORMAT,
    CalibrationModel,
    PhaseModel,
    pages_fingerprint,
)
from service.decide.decider import Decider
from service.flags import Flags, apply_overrides
from service.pipeline import Pipeline, RetrieveParams
from tests.unit.test_fallback_chain import _pipeline


def model(version: str, *, intercept: float, portable: bool, pages: str) -> CalibrationModel:
    n = len(FEATURES)
    phase = PhaseModel(intercept=intercept, coef=(0.0,) * n, mean=(0.0,) * n, scale=(1.0,) * n)
    return CalibrationModel(
        format=MODEL_FORMAT, version=version, corpus="c", corpus_fingerprint="f", pages_fingerprint=pages,
        features=FEATURES, phases={"1": phase, "2": phase, "3": phase}, answer_p=(0.6, 0.6, 0.6),
        no_match_p=(0.1, 0.1, 0.1), ambiguity_ratio=(1.01, 1.01, 1.01), library="test", query_set="q",
        fitted_at="now", portable=portable,
    )


FLAGS = apply_overrides(Flags(), {"decision.policy": "calibrated"})
# An operator's points: with them p = 0.88 only asks.
STRICT = apply_overrides(FLAGS, {"decision.answer_p": [0.95, 0.95, 0.95], "decision.no_match_p": [0.9, 0.9, 0.9]})


def _with(
    own: CalibrationModel | None, portable: CalibrationModel | None, flags: Flags = FLAGS,
) -> tuple[Pipeline, Decider]:
    decider = Decider(own=own, portable=portable)
    return _pipeline(flags, decider=decider), decider


SERVED = pages_fingerprint(["concepts/workspace"])  # the one page `_pipeline` serves


async def test_a_corpus_without_its_own_fit_is_decided_by_the_portable_fit_with_its_points() -> None:
    pipeline, decider = _with(
        model("seed-own", intercept=-5.0, portable=False, pages=pages_fingerprint(["other/page"])),
        model("portable-x", intercept=2.0, portable=True, pages=""),
    )
    assert decider.active_calibration() is decider.portable
    problem = decider.calibration_problem()
    assert problem is not None and "seed-own" in problem and "portable fit portable-x decides" in problem

    outcome = await pipeline.run_request(RetrieveParams(query="workspace canvas", phase_cap=2))
    assert outcome.status == "answer", outcome  # p = σ(2) = 0.88 ≥ the portable answer_p 0.6
    assert any("calibrated p(top page right) = 0.881" in line for line in outcome.results[0].match_explain)


async def test_the_corpus_own_fit_wins_and_an_operators_points_win_over_the_fits() -> None:
    fits = (model("own", intercept=2.0, portable=False, pages=SERVED),
            model("portable-x", intercept=-5.0, portable=True, pages=""))
    pipeline, decider = _with(*fits)
    assert decider.served_pages == SERVED
    assert decider.active_calibration() is decider.own and decider.calibration_problem() is None
    outcome = await pipeline.run_request(RetrieveParams(query="workspace canvas", phase_cap=2))
    assert outcome.status == "answer", outcome  # p = 0.88 ≥ the own fit's answer_p 0.6
    pipeline, _ = _with(*fits, flags=STRICT)
    outcome = await pipeline.run_request(RetrieveParams(query="workspace canvas", phase_cap=2))
    # 0.88 < the flag's no_match_p 0.9: no match, offering the closest page (the one served page)
    assert outcome.status == "no_match", outcome
    assert [o.doc_slug for o in outcome.options] == ["concepts/workspace"]


async def test_without_any_fit_that_fits_the_seed_rules_decide() -> None:
    pipeline, decider = _with(
        model("seed-own", intercept=2.0, portable=False, pages=pages_fingerprint(["other/page"])), None,
    )
    assert decider.active_calibration() is None
    problem = decider.calibration_problem()
    assert problem is not None and "the seed rules decide" in problem
    outcome = await pipeline.run_request(RetrieveParams(query="workspace canvas", phase_cap=2))
    assert not any("calibrated p" in line for r in outcome.results for line in r.match_explain)
