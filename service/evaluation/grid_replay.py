"""The calibrated decision replayed on every dev run at every grid point, fast (`decisions.fit`).

Choosing an operating point replays each dev run once per repeat's held-out p at each of ~1,700
grid points: millions of `replayed_status` calls for a six-corpus fit. Two facts make most of
them the same call:

- the decision compares p with thresholds only (`calibration.choose`), so a p lowered to the
  largest grid value it reaches (`cell`) decides alike at every point, and repeats whose p
  share a cell are replayed once and counted for each;
- the decision sees a point only through three comparisons (`regime`): p ≥ answer_p,
  p ≥ no_match_p and the second page's score ratio ≥ ambiguity_ratio. Every point with the
  same three answers gives the same decision, so each run is replayed once per regime it
  meets and the counts are looked up after that.

`tests/unit/test_grid_replay.py` holds the counts equal to replaying every point.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from service.decide.decider import replayed_status
from service.evaluation.decision_metrics import CaseRun, right_outcome, top_is_right
from service.evaluation.labelled import LabelledQuery
from service.flags import DecisionPoint

Counts = tuple[int, int, int, int, int]
"""(right decisions, answers, wrong answers, answerable cases, answered answerable cases)"""
REGIMES = 8


def cell(p: float, thresholds: Iterable[float]) -> float:
    """p lowered to the largest threshold it reaches (-1 below all): compared with any of
    them, p and its cell agree."""
    return max((t for t in thresholds if t <= p), default=-1.0)


@dataclass(frozen=True)
class Group:
    """One dev run at one p cell, counted `n` times (the repeats in it)."""

    run: CaseRun
    case: LabelledQuery
    p: float
    n: int


def groups_of(run: CaseRun, case: LabelledQuery, ps: Sequence[float], grid: Iterable[float]) -> list[Group]:
    """A run's repeats (held-out p of each) grouped by their cells."""
    grid = tuple(grid)
    cells = Counter(cell(p, grid) for p in ps)
    return [Group(run=run, case=case, p=p, n=n) for p, n in cells.items()]


def counts_of(group: Group, point: DecisionPoint) -> Counts:
    """One replay's counts (not yet times `n`)."""
    status, shown, options = replayed_status(group.run, group.p, point)
    answered = status == "answer"
    answerable = group.case.decision == "answer"
    return (int(right_outcome(group.case, status, shown, options)), int(answered),
            int(answered and not top_is_right(group.case, shown)), int(answerable), int(answerable and answered))


class GridReplay:
    """`evaluate(point)` for `calibration_fit.choose_point`: the counts of `groups` at a point."""

    def __init__(self, groups: Sequence[Group]):
        self.groups = list(groups)
        self.p = np.array([g.p for g in self.groups], dtype=float)
        self.second = np.array([g.run.features["score_ratio"] for g in self.groups], dtype=float)
        self.n = np.array([g.n for g in self.groups], dtype=np.int64)
        self.known = np.zeros((len(self.groups), REGIMES), dtype=bool)
        self.table = np.zeros((len(self.groups), REGIMES, 5), dtype=np.int64)
        self.rows = np.arange(len(self.groups))

    def regime(self, point: DecisionPoint) -> np.ndarray:
        """Each group's three comparisons with the point, as a number 0-7."""
        code: np.ndarray = (4 * (self.p >= point.answer_p) + 2 * (self.p >= point.no_match_p)
                            + (self.second >= point.ambiguity_ratio))
        return code

    def __call__(self, point: DecisionPoint) -> Counts:
        code = self.regime(point)
        for i in np.nonzero(~self.known[self.rows, code])[0]:
            self.table[i, code[i]] = counts_of(self.groups[i], point)
            self.known[i, code[i]] = True
        total = (self.table[self.rows, code] * self.n[:, None]).sum(axis=0)
        right, answers, wrong, answerable, covered = (int(x) for x in total)
        return right, answers, wrong, answerable, covered

