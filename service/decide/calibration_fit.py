"""Fitting the calibrated decision (scikit-learn; only the `fit-decisions` command imports it).

One logistic regression per phase on the dev split: x = `calibration.FEATURES` of the
ranking, y = "the ranking's first page is one of the case's acceptable pages" (0 for every
out-of-domain case).  Then `answer_p`, `no_match_p` and `ambiguity_ratio` are chosen on dev by
replaying the decision rule (`calibration.choose`) over a grid, per phase (phase 3 with
phase 2's point for its keyword verdict): the most right decisions (answer / clarify /
no match as labelled, with the right page or options) with wrong answers ≤ `max_wrong`
(when no point manages that, the fewest wrong answers).

The points are chosen on cross-fitted p (`cross_fitted`): each dev case's p comes from a model
that never saw it.  A model's p on its own training cases is over-confident, so points
chosen on them promise fewer wrong answers than the model makes on new queries.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from service.decide.calibration import FEATURES, PhaseModel, probability
from service.flags import DecisionPoint

ANSWER_GRID = tuple(round(0.30 + 0.04 * i, 2) for i in range(18))  # 0.30 .. 0.98
# Capped below 0.6: "right outcome" scores a needless question and a needless no match alike,
# but the user can answer a question; above the cap the fit swaps one for the other for 1-2 cases.
NO_MATCH_GRID = tuple(round(0.02 + 0.04 * i, 2) for i in range(15))  # 0.02 .. 0.58
AMBIGUITY_GRID = (0.80, 0.85, 0.90, 0.93, 0.96, 0.98, 1.01)  # 1.01: never ask between two pages
FOLDS = 5
REPEATS = 5  # fold assignments: one alone moves a point with the few cases near it


def fit_phase(
    rows: Sequence[Mapping[str, float]], labels: Sequence[int], c: float = 1.0, excluded: frozenset[str] = frozenset(),
) -> PhaseModel:
    """Standardise, fit a logistic regression, return its parameters (no sklearn objects).
    `excluded` features get weight 0 (mean 0, scale 1): the model ignores them."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import brier_score_loss
    from sklearn.preprocessing import StandardScaler

    used = [name for name in FEATURES if name not in excluded]
    x = np.array([[row[name] for name in used] for row in rows], dtype=float)
    y = np.array(labels, dtype=int)
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    z = (x - scaler.mean_) / scale
    if len(set(y.tolist())) < 2:
        raise ValueError("fitting needs both right and wrong top pages among the dev cases")
    model = LogisticRegression(C=c, max_iter=2000).fit(z, y)
    p = model.predict_proba(z)[:, 1]
    fitted = {name: (float(w), float(m), float(s))
              for name, w, m, s in zip(used, model.coef_[0], scaler.mean_, scale, strict=True)}
    weights = [fitted.get(name, (0.0, 0.0, 1.0)) for name in FEATURES]
    return PhaseModel(
        intercept=float(model.intercept_[0]),
        coef=tuple(w for w, _, _ in weights),
        mean=tuple(m for _, m, _ in weights),
        scale=tuple(s for _, _, s in weights),
        dev_cases=len(y),
        dev_brier=round(float(brier_score_loss(y, p)), 4),
    )


def fold_of(key: str, repeat: int, folds: int = FOLDS, salt: str = "") -> int:
    """The case's fold in one repeat: a hash, so a refit on the same cases folds them alike.
    `salt`: another assignment, as likely as this one (how far a table moves by its folds alone)."""
    return int(hashlib.sha256(f"{salt}{repeat}:{key}".encode()).hexdigest(), 16) % folds


def cross_fitted(
    keys: Sequence[str], rows: Sequence[Mapping[str, float]], labels: Sequence[int], *,
    excluded: frozenset[str] = frozenset(), folds: int = FOLDS, repeats: int = REPEATS, salt: str = "",
) -> list[dict[str, float]]:
    """Per repeat, every case's p from the model fitted on the other folds (keys: case ids)."""
    out: list[dict[str, float]] = []
    for repeat in range(repeats):
        fold = [fold_of(key, repeat, folds, salt) for key in keys]
        held_out: dict[str, float] = {}
        for k in range(folds):
            train = [i for i, f in enumerate(fold) if f != k]
            model = fit_phase([rows[i] for i in train], [labels[i] for i in train], excluded=excluded)
            held_out.update((keys[i], probability(model, rows[i])) for i, f in enumerate(fold) if f == k)
        out.append(held_out)
    return out


@dataclass(frozen=True)
class Choice:
    point: DecisionPoint
    right_decisions: int
    wrong_rate: float
    coverage: float


Evaluate = Callable[[DecisionPoint], tuple[int, int, int, int, int]]
"""operating point → (right decisions, answers, wrong answers, answerable, answered answerable) of one phase"""


def choose_point(evaluate: Evaluate, max_wrong: float = 0.03) -> Choice:
    """The grid point with the most right decisions whose wrong-answer rate ≤ max_wrong;
    when no point keeps within it, the one with the fewest wrong answers (then most right)."""
    best: Choice | None = None
    best_key: tuple[bool, float, int] | None = None
    for answer_p, no_match_p, ratio in itertools.product(ANSWER_GRID, NO_MATCH_GRID, AMBIGUITY_GRID):
        if no_match_p > answer_p:
            continue
        point = DecisionPoint(answer_p=answer_p, no_match_p=no_match_p, ambiguity_ratio=ratio)
        right, answers, wrong, answerable, covered = evaluate(point)
        rate = wrong / answers if answers else 0.0
        within = rate <= max_wrong
        key = (within, right if within else -rate, right)
        if best_key is None or key > best_key:
            best_key = key
            best = Choice(point=point, right_decisions=right, wrong_rate=rate,
                          coverage=covered / answerable if answerable else 0.0)
    assert best is not None  # the grid is not empty
    return best
