"""Does a ranking change help the queries typed exact (names, quoted strings)? Two `eval-kinds
--cases` files per labelled set compared on those queries' first page.

Usage:
    for w in 0.7,0.3 0.85,0.15; do .venv/bin/python -m lab eval-kinds --queries bench/queries/SET.yaml \\
        --phase 3 --set "fusion.weights.exact=[$w]" --cases /tmp/fw-SET-$w.json; done
    .venv/bin/python -m lab.experiments.exact_cases --pair SET=/tmp/fw-SET-0.7,0.3.json,/tmp/fw-SET-0.85,0.15.json ...

Per set and split: exact-typed cases (`query_type.detect_query_type`, as the service types
them) with the right first page, before and after; the cases whose first page changed from
right to wrong or back; the pooled counts.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from service.normalize.query_type import detect_query_type
from service.normalize.text import clean

PHASE = "3"


def right_first(path: Path) -> dict[str, tuple[bool, str, str]]:
    """case id → (first page right, split, query) of the phase-3 ranking in an eval-kinds --cases file."""
    rows = json.loads(path.read_text(encoding="utf-8"))[PHASE]
    return {r["id"]: (bool(r["ranking"]) and r["ranking"][0] in r["pages"], r["split"], r["query"]) for r in rows}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pair", action="append", required=True, metavar="SET=BEFORE,AFTER")
    args = parser.parse_args(argv)
    pooled = {(when, split): [0, 0] for when in ("before", "after") for split in ("dev", "test")}
    for pair in args.pair:
        name, _, files = pair.partition("=")
        before_file, _, after_file = files.partition(",")
        before, after = right_first(Path(before_file)), right_first(Path(after_file))
        exact = {k for k, (_, _, query) in before.items() if detect_query_type(clean(query)) == "exact"}
        line = []
        for when, runs in (("before", before), ("after", after)):
            for split in ("dev", "test"):
                hits = [runs[k][0] for k in exact if runs[k][1] == split]
                pooled[(when, split)][0] += sum(hits)
                pooled[(when, split)][1] += len(hits)
                line.append(f"{when} {split} {sum(hits)}/{len(hits)}")
        print(f"{name}: " + ", ".join(line))
        for k in sorted(exact):
            if before[k][0] != after[k][0]:
                print(f"    {before[k][1]}: right {'before' if before[k][0] else 'after'} only: {before[k][2]}")
    print("pooled: " + ", ".join(f"{w} {s} {n}/{d}" for (w, s), (n, d) in pooled.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
