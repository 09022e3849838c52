"""The relevance-as-a-decision-signal experiment (lab/experiments/relevance_decision.py): the added
features reach phase 3's seed-rules runs only, and the fit sees them only inside `extra_features`."""

from __future__ import annotations

import pytest

from lab.experiments.relevance_decision import EXTRA, extra_features, features_of, with_relevance
from service.decide import calibration, calibration_fit
from service.decide.calibration import FEATURES
from service.evaluation import decisions
from service.evaluation.decision_metrics import CaseRun
from service.evaluation.decisions import Collected


def run(case_id: str, phase: int, policy: str = "seed_rules") -> CaseRun:
    return CaseRun(case_id=case_id, phase=phase, policy=policy, status="answer", reason="r", shown=("a",),
                   ranked=("a", "b"), options=(), features=dict.fromkeys(FEATURES, 0.0))


def seen_features() -> list[object]:
    """`FEATURES` as each module that reads it sees it (the fit, the model's p, the fitted file)."""
    return [vars(module)["FEATURES"] for module in (calibration, calibration_fit, decisions)]


def test_the_margin_is_the_first_pages_score_over_the_seconds() -> None:
    two = {"pages": [{"page": "a", "score": 2.5}, {"page": "b", "score": -1.0}]}
    assert features_of(two) == {"relevance_top": 2.5, "relevance_margin": 3.5}
    assert features_of({"pages": [{"page": "a", "score": 1.5}]}) == {"relevance_top": 1.5, "relevance_margin": 0.0}
    assert features_of({"pages": []}) == {"relevance_top": 0.0, "relevance_margin": 0.0}


def test_only_phase_3_seed_rules_runs_get_the_score() -> None:
    collected = Collected(corpus="x", corpus_fingerprint="f", pages_fingerprint="p",
                          runs=[run("c1", 2), run("c1", 3), run("c1", 3, "calibrated")])
    scores = {"c1": {"pages": [{"page": "a", "score": 2.0}, {"page": "b", "score": 0.5}]}}
    phase2, phase3, calibrated = with_relevance(collected, scores).runs
    assert {k: phase3.features[k] for k in EXTRA} == {"relevance_top": 2.0, "relevance_margin": 1.5}
    assert {k: phase2.features[k] for k in EXTRA} == dict.fromkeys(EXTRA, 0.0)
    assert {k: calibrated.features[k] for k in EXTRA} == dict.fromkeys(EXTRA, 0.0)
    assert "relevance_top" not in collected.runs[1].features  # a copy: the loaded runs are unchanged


def test_the_fit_weighs_an_added_feature_inside_the_block_and_forgets_it_after() -> None:
    rows = [dict.fromkeys(FEATURES, 0.0) | {"relevance_top": score} for score in (-3.0, -2.0, -1.0, 1.0, 2.0, 3.0)]
    labels = [0, 0, 0, 1, 1, 1]
    with extra_features(EXTRA[:1]):
        assert seen_features() == [(*FEATURES, "relevance_top")] * 3
        model = calibration_fit.fit_phase(rows, labels)
        assert len(model.coef) == len(FEATURES) + 1
        assert model.coef[-1] > 0.5  # the only feature that varies, and it separates the labels
        assert calibration.probability(model, rows[-1]) > 0.5 > calibration.probability(model, rows[0])
    assert seen_features() == [FEATURES] * 3
    with pytest.raises(ValueError):  # outside the block a model with the extra weight no longer fits FEATURES
        calibration.probability(model, rows[0])
