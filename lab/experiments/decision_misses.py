"""Where does the calibrated decision miss on the labelled test splits, and how sure was it there?

Usage:
    .venv/bin/python -m lab.experiments.decision_misses --signals /tmp/loco-v3 \
        [--fit service/decide/data/portable.json] [--sets NAME ...] [--examples 14] [--seed 1]

The fit (`--fit`, default the shipped portable fit) is replayed with its own points on the
seed-rules runs of every set's test split at phase 3 (`cross_corpus.replay_calibrated`; nothing is
served; signals directory as in lab/experiments/signals.py). Printed:

1. the cases counted by (kind: out_of_domain, ambiguous, multi_intent, or single for the rest;
   labelled decision; whether the ranking's first page is right: top-right / top-wrong / - for a
   case without pages; the replayed status; RIGHT or miss by `decision_metrics.right_outcome`),
   most frequent first, each with the median calibrated p of its cases;
2. for single-need cases whose first page is right but which were not answered (clarify,
   no_match), a seeded sample of `--examples` per status: set, kind, query, the first two pages,
   p and the signals that weigh most (matched_share, top_similarity, score_ratio, whether each
   leg agrees on the first page).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence

from lab.experiments.signals import add_arguments, fit_from, runs_from, seed_rule_runs
from service.evaluation.cross_corpus import replay_calibrated
from service.evaluation.decision_metrics import right_outcome, top_is_right
from service.evaluation.decisions import calibrated_p

SPECIAL_KINDS = ("out_of_domain", "ambiguous", "multi_intent")
UNANSWERED = ("clarify", "no_match")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    parser.add_argument("--examples", type=int, default=14, help="examples per status (default 14)")
    parser.add_argument("--seed", type=int, default=1, help="the examples' sample (default 1)")
    args = parser.parse_args(argv)
    model = fit_from(args.fit)
    corpora = runs_from(args)

    counts: Counter[tuple[str, ...]] = Counter()
    ps: dict[tuple[str, ...], list[float]] = defaultdict(list)
    examples: dict[str, list[tuple[object, ...]]] = defaultdict(list)
    for name, case, run in seed_rule_runs(corpora):
        status, shown, options = replay_calibrated(model, run)
        p = calibrated_p(model, run)
        top = top_is_right(case, run.ranked) if case.pages else None
        kind = case.kind if case.kind in SPECIAL_KINDS else "single"
        key: tuple[str, ...] = (
            kind,
            case.decision,
            "-" if top is None else "top-right" if top else "top-wrong",
            status,
            "RIGHT" if right_outcome(case, status, shown, options) else "miss",
        )
        counts[key] += 1
        ps[key].append(p)
        if kind == "single" and top and status in UNANSWERED:
            f = run.features
            examples[status].append(
                (
                    name,
                    case.kind,
                    case.query,
                    run.ranked[:2],
                    round(p, 2),
                    round(f["matched_share"], 2),
                    round(f["top_similarity"], 2),
                    round(f["score_ratio"], 2),
                    int(f["keyword_agrees"]),
                    int(f["semantic_agrees"]),
                )
            )

    print("count (kind, decision, first page, status, outcome) median p")
    for group, n in counts.most_common():
        print(n, group, round(statistics.median(ps[group]), 2))
    rng = random.Random(args.seed)
    for status in UNANSWERED:
        found = examples.get(status, [])
        print(f"== {status}: {len(found)} single-need cases with the first page right")
        print(
            "   (set, kind, query, first two pages, p, matched_share, top_similarity, score_ratio,"
        )
        print("    keyword_agrees, semantic_agrees)")
        for example in rng.sample(found, min(args.examples, len(found))):
            print(example)
    return 0


if __name__ == "__main__":
    sys.exit(main())
