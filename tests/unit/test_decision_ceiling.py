"""The decision-ceiling experiment (lab/experiments/decision_ceiling.py): what a decision could
reach on given rankings, with the p it has and with one that knew the labels."""

from __future__ import annotations

from typing import Literal

from lab.experiments.decision_ceiling import Replayable, best_point, perfect, replay
from service.decide.calibration import FEATURES
from service.evaluation.decision_metrics import CaseRun
from service.evaluation.labelled import Kind, LabelledQuery
from service.flags import DecisionFlags
from tests.unit.test_cross_corpus import held_out_id
from tests.unit.test_gate_tradeoff import fit_reading_top_raw

POINT = fit_reading_top_raw().points(DecisionFlags()).at(3)  # answer at p ≥ 0.7, no match below 0.1


def row(p: float, kind: Kind = "question", first: str = "x", pages: tuple[str, ...] = ("x",)) -> Replayable:
    decision: Literal["answer", "clarify", "no_match"] = (
        "no_match" if kind == "out_of_domain" else "clarify" if kind == "ambiguous" else "answer")
    case = LabelledQuery(id=held_out_id("a"), query="how do I x", kind=kind, decision=decision,
                         pages=() if kind == "out_of_domain" else pages)
    ranked = (first, *[page for page in ("x", "y", "z") if page != first])
    features = dict.fromkeys(FEATURES, 0.0) | {"top_score": 1.0, "tokens": 3.0, "score_ratio": 0.1,
                                               "top_similarity": 0.6}
    run = CaseRun(case_id=case.id, phase=3, policy="seed_rules", status="answer", reason="r",
                  shown=ranked, ranked=ranked, options=(), features=features)
    return Replayable("a", case, run, p, POINT)


def test_a_perfect_decision_answers_exactly_the_right_first_pages() -> None:
    rows = [row(0.9), row(0.9, first="y"), row(0.2, "ambiguous", pages=("y", "x")), row(0.95, "out_of_domain")]
    t = perfect(rows)
    # The wrong first page is not answered; the ambiguous case's two pages are the first two; the
    # out-of-domain question gets no match: three of four, no wrong answer.
    assert (t.right, t.answers, t.wrong, t.ood_no_match) == (3, 1, 0, 1)


def test_the_chosen_point_keeps_wrong_answers_within_the_bound() -> None:
    rows = [row(0.99), row(0.93, first="y"), row(0.8), row(0.6)]
    as_fitted = replay(rows)
    assert (as_fitted.answers, as_fitted.wrong) == (3, 1)  # 0.99, 0.93 (wrong) and 0.8 answered
    points, t = best_point(rows, max_wrong=0.05)
    # Only a point above the wrong first page's 0.93 keeps wrong answers under 5 %.
    assert points is not None and points[0] > 0.93
    assert (t.answers, t.wrong, t.right) == (1, 0, 1)
    points, t = best_point(rows, max_wrong=0.5)
    assert points is not None and points[0] <= 0.6  # a bound of one in two lets every page be answered
    assert (t.answers, t.wrong, t.right) == (4, 1, 3)
