"""When a no match's closest pages help (flag `decision.closest_matches_min_p`).

A calibrated no match offers the ranking's first pages as "closest matches". For an
out-of-domain question they are noise ("what is the capital of France" → "the closest matches
are Component v-model and …"); for an in-domain question the ranking could not answer they may
hold the page. For the phase-3 runs that p declines (p below the no-match point, some chunk near
the query), this counts per band of p and split: out-of-domain questions, and in-domain ones with
a right page among the pages offered or without one.

    .venv/bin/python -m lab.experiments.closest_matches --signals DIR [--sets NAME ...] [--fit FILE]
"""

from __future__ import annotations

import argparse
import collections
import sys
from collections.abc import Sequence

from lab.experiments.signals import add_arguments, fit_from, runs_from, seed_rule_runs
from service.decide.calibration import CLOSEST_MATCHES
from service.evaluation.decisions import calibrated_p
from service.flags import DecisionFlags

BANDS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.45)
KINDS = ("out of domain", "in domain, a right page offered", "in domain, none offered")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    model = fit_from(args.fit)
    point = model.points(DecisionFlags()).at(3)
    counts: dict[tuple[str, float], collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for split in ("dev", "test"):
        for _, case, run in seed_rule_runs(runs_from(args), splits=(split,)):
            p = calibrated_p(model, run)
            if p >= point.no_match_p or run.features["top_similarity"] < point.nothing_similar_below or not run.ranked:
                continue
            band = max(b for b in BANDS if p >= b)
            offered = set(run.ranked[:CLOSEST_MATCHES])
            kind = KINDS[0] if not case.pages else KINDS[1] if offered & set(case.pages) else KINDS[2]
            counts[(split, band)][kind] += 1
    print(f"Phase-3 no matches by p (no-match point {point.no_match_p}), closest pages = the first "
          f"{CLOSEST_MATCHES} ranked\n")
    print("| split | p from | " + " | ".join(KINDS) + " |\n|---|--:|" + "--:|" * len(KINDS))
    for split, band in sorted(counts):
        row = counts[(split, band)]
        print(f"| {split} | {band:.2f} | " + " | ".join(str(row[k]) for k in KINDS) + " |")
    for split in ("dev", "test"):
        for floor in BANDS[1:4]:
            below = [counts[(split, b)] for b in BANDS if b < floor]
            print(f"- {split}, floor {floor:.2f}: offers withheld from {sum(c[KINDS[0]] for c in below)} out-of-domain "
                  f"questions; {sum(c[KINDS[1]] for c in below)} in-domain offers with a right page lost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
