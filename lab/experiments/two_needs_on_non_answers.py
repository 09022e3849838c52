"""Would offering a split message's two pages pay when p does not answer it? (issue 40 item 4)

Usage:
    .venv/bin/python -m lab.experiments.two_needs_on_non_answers clarify|answer \\
        eval-decisions --cross-corpus --max-wrong 0.05 --queries ... --seeds-dir ... --signals ... [...]

The calibrated policy offers both needs' pages only when p answers (`Decider._second_need`).
This replays the leave-one-corpus-out table (every argument after the mode is `python -m
service`'s) with one change to the replayed routing (`decider.replayed_status`, which the
fits' grid uses too): a run the seed rules decided as two needs (reason `multi_intent`, their
two pages first among `shown`) that p would not answer becomes a clarification offering those
two pages (`clarify`) or an answer led by them (`answer`). Nothing is served.

Since 2026-11-27 (night) the service itself asks between the two pages when both are among the
whole message's first three (`decider.two_needs_question`, `TWO_NEEDS_DEPTH`; it was measured
here as a third mode first): `clarify` now measures dropping that condition.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import service.decide.decider as decider
import service.evaluation.cross_corpus as cross_corpus
import service.evaluation.grid_replay as grid_replay
from service.__main__ import main as service_main
from service.decide.decider import RecordedRun
from service.flags import DecisionPoint

MODES = ("clarify", "answer")
_shipped = decider.replayed_status


Replay = Callable[[RecordedRun, float, DecisionPoint], tuple[str, tuple[str, ...], tuple[str, ...]]]


def with_two_needs(mode: str) -> Replay:
    def replayed(run: RecordedRun, p: float, point: DecisionPoint) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        status, shown, options = _shipped(run, p, point)
        if status == "answer" or run.reason != "multi_intent" or len(run.shown) < 2:
            return status, shown, options
        pages = tuple(run.shown[:2])
        if mode == "answer":
            return "answer", tuple(dict.fromkeys((*pages, *run.ranked))), pages
        return "clarify", pages, pages

    return replayed


def main() -> int:
    if len(sys.argv) < 3 or sys.argv[1] not in MODES:
        print(__doc__, file=sys.stderr)
        return 2
    replayed = with_two_needs(sys.argv[1])
    # Both modules hold their own name for the routing: each is pointed at the variant.
    setattr(cross_corpus, "replayed_status", replayed)  # noqa: B010
    setattr(grid_replay, "replayed_status", replayed)  # noqa: B010
    return service_main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
