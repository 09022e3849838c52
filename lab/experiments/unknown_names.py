"""What the unknown-name rule (service/decide/names.py) changes in recorded runs, for the table.

Usage:
    .venv/bin/python -m lab.experiments.unknown_names --signals /tmp/loco-v3 --out /tmp/loco-v4
    .venv/bin/python -m service eval-decisions --cross-corpus ... --signals /tmp/loco-v4/NAME.json ...

The rule decides before any policy and reads only the query and the corpus's names, so runs
collected before it can be brought up to date without serving again: every labelled case whose
query the rule now decides (normalised against its corpus's lexicon, read in memory as seeding
reads it) gets, in each of its runs, the service's no match: reason `unknown_identifier`, no
page shown, the ranking's first pages as options unless the query is names only. Prints each
such case with its labelled decision; writes the updated signals files to `--out`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from lab.evaluation.kinds import corpus_dir, memory_pipeline, read_corpus
from lab.experiments.signals import add_arguments, runs_from
from service.decide import names
from service.decide.calibration import CLOSEST_MATCHES
from service.evaluation.decisions import Collected
from service.flags import Flags
from service.normalize.query import normalize_query
from service.settings import load_settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser, fit=False)
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="where the updated signals go")
    args = parser.parse_args(argv)
    flags, settings = Flags(), load_settings()
    args.out.mkdir(parents=True, exist_ok=True)
    changed = 0
    for corpus in runs_from(args):
        signals = args.signals / f"{corpus.name}.json"
        collected = msgspec.json.decode(signals.read_bytes(), type=Collected)
        folder = corpus_dir(collected.corpus, settings, None)
        lexicon = memory_pipeline(folder, flags, *read_corpus(folder, flags)).require_indexes().lexicon
        decided: dict[str, bool] = {}  # case id → names only (no closest pages offered)
        for case in corpus.cases:
            query, _ = normalize_query(case.query, lexicon)
            if names.unknown_names(query):
                decided[case.id] = query.only_identifiers
                print(f"{corpus.name}\t{case.decision}\t{case.query}")
        runs = []
        for run in collected.runs:
            if run.case_id in decided and run.reason != names.REASON:
                closest = () if decided[run.case_id] else run.ranked[:CLOSEST_MATCHES]  # distinct pages already
                run = msgspec.structs.replace(run, status="no_match", reason=names.REASON, shown=(), options=closest)
                changed += 1
            runs.append(run)
        collected.runs = runs
        (args.out / signals.name).write_bytes(msgspec.json.encode(collected))
    print(f"{changed} runs now decided by the unknown-name rule; signals written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
