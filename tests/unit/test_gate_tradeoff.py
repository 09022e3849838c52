"""The gate trade-off experiment (lab/experiments/gate_tradeoff.py) on a small fixture: raising the
answer point trades wrong answers for needless clarifications, and the hindsight threshold counts
what it leaves unanswered."""

from __future__ import annotations

import math

import pytest

from lab.experiments.gate_tradeoff import at_floor, auc, oracle
from service.decide.calibration import FEATURES, MODEL_FORMAT, CalibrationModel, PhaseModel
from service.evaluation.cross_corpus import CorpusRuns
from service.evaluation.decision_metrics import CaseRun
from service.evaluation.labelled import LabelledQuery
from tests.unit.test_cross_corpus import held_out_id


def fit_reading_top_raw() -> CalibrationModel:
    """p = σ(top_raw): a case's p is set by its `top_raw` feature alone; answer at p ≥ 0.7."""
    n = len(FEATURES)
    coef = tuple(1.0 if name == "top_raw" else 0.0 for name in FEATURES)
    phase = PhaseModel(intercept=0.0, coef=coef, mean=(0.0,) * n, scale=(1.0,) * n)
    return CalibrationModel(
        format=MODEL_FORMAT, version="t", corpus="x", corpus_fingerprint="f", pages_fingerprint="",
        features=FEATURES, phases={"1": phase, "2": phase, "3": phase}, answer_p=(0.7,) * 3,
        no_match_p=(0.1,) * 3, ambiguity_ratio=(1.01,) * 3, library="t", query_set="q", fitted_at="t", portable=True,
    )


def logit(p: float) -> float:
    return math.log(p / (1 - p))


def corpus(name: str, cases: list[tuple[float, bool]]) -> CorpusRuns:
    """Questions at phase 3, each with its p and whether the ranking's first page is right."""
    labelled, runs = [], []
    for p, right in cases:
        case = LabelledQuery(id=held_out_id(name), query="how do I x", kind="question", decision="answer",
                             pages=(f"{name}/x",))
        ranked = (f"{name}/x", f"{name}/y") if right else (f"{name}/y", f"{name}/x")
        features = dict.fromkeys(FEATURES, 0.0) | {"top_score": 1.0, "tokens": 3.0, "score_ratio": 0.1,
                                                   "top_raw": logit(p), "top_similarity": 0.6}
        labelled.append(case)
        runs.append(CaseRun(case_id=case.id, phase=3, policy="seed_rules", status="answer", reason="r",
                            shown=ranked, ranked=ranked, options=(), features=features))
    return CorpusRuns(name=name, cases=labelled, runs=runs)


def test_raising_the_answer_point_trades_wrong_answers_for_needless_questions() -> None:
    corpora = [corpus("a", [(0.99, True), (0.93, False), (0.8, True)]), corpus("b", [(0.97, True), (0.75, True)])]
    fits = {"a": fit_reading_top_raw(), "b": fit_reading_top_raw()}
    own, per = at_floor(corpora, fits, None)
    assert (own.answers, own.wrong, own.needless) == (5, 1, 0)
    assert (per["a"].wrong, per["a"].answers) == (1, 3)
    raised, per = at_floor(corpora, fits, 0.95)
    # Above 0.95 only the two surest right answers remain; the three others are asked about, and
    # the two of them whose first page was right are needless questions.
    assert (raised.answers, raised.wrong, raised.needless) == (2, 0, 2)
    assert per["a"].wrong == 0


def test_the_hindsight_threshold_is_the_lowest_that_keeps_wrong_answers_within_the_budget() -> None:
    corpora = [corpus("a", [(0.99, True), (0.93, False), (0.8, True), (0.6, True)])]
    best = oracle(corpora, {"a": fit_reading_top_raw()})
    # Every threshold below 0.99 answers the wrong one (≥ 25 % wrong): only p ≥ 0.99 keeps ≤ 5 %.
    assert best.threshold == pytest.approx(0.99)
    assert (best.answers, best.wrong, best.unanswered, best.clear_right, best.in_domain) == (1, 0, 2, 3, 4)
    assert best.auc == pytest.approx(1 / 3)  # one right page of three is above the wrong one


def test_auc_counts_ties_as_half() -> None:
    assert auc([0.9, 0.1], [True, False]) == 1.0
    assert auc([0.5, 0.5], [True, False]) == 0.5
    assert math.isnan(auc([0.5], [True]))
