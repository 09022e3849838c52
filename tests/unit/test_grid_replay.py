"""The fit's fast replay (service/evaluation/grid_replay.py) counts what replaying every run at
every grid point counts: the operating points it chooses are the ones a full replay chooses."""

from __future__ import annotations

import itertools
import random

from service.decide.calibration import FEATURES
from service.decide.calibration_fit import AMBIGUITY_GRID, ANSWER_GRID, NO_MATCH_GRID
from service.evaluation.decision_metrics import CaseRun
from service.evaluation.grid_replay import Counts, GridReplay, Group, cell, counts_of, groups_of
from service.evaluation.labelled import LabelledQuery
from service.flags import DecisionPoint

GRID = (*ANSWER_GRID, *NO_MATCH_GRID)
PAGES = ("a", "b", "c", "d")


def random_groups(rng: random.Random, runs: int) -> list[Group]:
    groups = []
    for i in range(runs):
        ranked = tuple(rng.sample(PAGES, rng.randint(1, 4)))
        features = dict.fromkeys(FEATURES, 0.0) | {
            "top_score": rng.choice((0.0, 1.0, 2.0)), "tokens": rng.choice((0.0, 1.0, 3.0)),
            "score_ratio": rng.choice((0.0, 0.5, 0.82, 0.9, 0.95, 0.99, 1.0)),
            "unknown_share": rng.choice((0.0, 0.5)), "matched_share": rng.choice((0.5, 1.0)),
        }
        decision = rng.choice(("answer", "clarify", "no_match"))
        case = LabelledQuery(id=f"c{i}", query="q", kind="question" if decision != "no_match" else "out_of_domain",
                             decision=decision, pages=() if decision == "no_match" else (rng.choice(PAGES),))
        run = CaseRun(
            case_id=case.id, phase=3, policy="seed_rules", status="answer", reason="confident", shown=ranked,
            ranked=ranked, options=ranked[:2], features=features,
        )
        groups += groups_of(run, case, [rng.random() for _ in range(5)], GRID)
    return groups


def brute_force(groups: list[Group], point: DecisionPoint) -> Counts:
    """Every group replayed at the point: what `GridReplay` must count."""
    totals = [0] * 5
    for g in groups:
        totals = [t + g.n * c for t, c in zip(totals, counts_of(g, point), strict=True)]
    right, answers, wrong, answerable, covered = totals
    return right, answers, wrong, answerable, covered


def test_the_fast_replay_counts_what_replaying_every_point_counts() -> None:
    rng = random.Random(11)
    groups = random_groups(rng, 60)
    fast = GridReplay(groups)
    points = [DecisionPoint(answer_p=a, no_match_p=n, ambiguity_ratio=r)
              for a, n, r in itertools.product(ANSWER_GRID[::3], NO_MATCH_GRID[::3], AMBIGUITY_GRID) if n <= a]
    for _ in range(2):  # the second pass finds every regime already replayed
        rng.shuffle(points)  # the memo must not depend on the order points are tried in
        for point in points:
            assert fast(point) == brute_force(groups, point), point


def test_repeats_in_one_grid_cell_are_replayed_once_and_counted_for_each() -> None:
    run = CaseRun(case_id="x", phase=1, policy="seed_rules", status="answer", reason="confident", shown=("a",),
                  ranked=("a",), options=(), features=dict.fromkeys(FEATURES, 1.0))
    case = LabelledQuery(id="x", query="q", kind="question", decision="answer", pages=("a",))
    groups = groups_of(run, case, [0.951, 0.955, 0.99, 0.10], GRID)
    assert sorted((g.p, g.n) for g in groups) == [(0.1, 1), (0.94, 2), (0.98, 1)]
    assert cell(0.01, GRID) == -1.0
