"""Which calibrated fit decides the labelled sets' test splits better, on the same recorded runs?

Usage:
    .venv/bin/python -m lab.experiments.compare_fits --signals /tmp/loco-v3 \
        --fit service/decide/data/portable.json --fit OTHER.json [--sets NAME ...] [--show NAME ...]

Each fit (`--fit`, repeatable; default the shipped portable fit) is replayed, with its own
points, on the seed-rules runs of every set's test split at phase 3 and counted as
`eval-decisions --cross-corpus` counts (`cross_corpus.calibrated_tally`); nothing is served. The signals
directory holds `eval-decisions --cross-corpus --signals` files, one per labelled set
(lab/experiments/signals.py). Unlike the cross-corpus table the fits are not remade per held-out
corpus: a fit that saw a set's dev split is compared as it ships. Per fit: the pooled row, and a
row for each set `--show` names (default logseq, whose wrong answers have a gate of their own).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from lab.experiments.signals import PHASE, add_arguments, fit_from, runs_from
from service.decide.decider import PORTABLE_CALIBRATION_FILE
from service.evaluation.cross_corpus import Tally, calibrated_tally

HEADER = (
    "| fit | set | cases | right outcome | wrong / answers | OOD no match | needless clarify "
    "| two needs: both pages (n) |\n|---|---|--:|--:|--:|--:|--:|--:|"
)


def pct(x: float | int | None) -> str:
    return "–" if x is None else f"{100 * float(x):.1f} %"


def line(fit: str, name: str, tally: Tally) -> str:
    r = tally.row()
    return (
        f"| {fit} | {name} | {r['cases']} | {pct(r['right_outcome'])} | "
        f"{pct(r['wrong_of_answers'])} ({r['wrong_answers']}/{r['answers']}) | "
        f"{pct(r['ood_no_match'])} | {pct(r['needless_clarifications'])} | "
        f"{pct(r['multi_intent_both_pages'])} ({r['multi_intent']}) |"
    )


def label(path: Path) -> str:
    """The fit's path as typed, or relative to here (the default is absolute)."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser, fit=False)
    parser.add_argument(
        "--fit",
        type=Path,
        action="append",
        metavar="FILE",
        help="calibrated fit to replay (repeatable; default: the shipped portable fit)",
    )
    parser.add_argument(
        "--show",
        nargs="*",
        default=["logseq"],
        metavar="NAME",
        help="sets that get a row of their own beside the pooled one (default: logseq; none: --show)",
    )
    args = parser.parse_args(argv)
    corpora = runs_from(args)
    lines = [HEADER]
    for path in args.fit or [PORTABLE_CALIBRATION_FILE]:
        model = fit_from(path)
        pooled = Tally()
        for corpus in corpora:
            tally = calibrated_tally(corpus, model, "test", PHASE)
            pooled.add(tally)
            if corpus.name in args.show:
                lines.append(line(label(path), corpus.name, tally))
        lines.append(line(label(path), f"pooled ({len(corpora)} sets)", pooled))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
