"""Phase 3's ranking under flag overrides, over every labelled set, against the flags in force.

Each variant (`--variant 'FLAG=VALUE[;FLAG=VALUE]'`) and the baseline run `python -m lab
eval-kinds --phase 3 --cases` on every set of bench/queries (each in its own database under
`--work`), and the first pages are compared case by case: top-1 and top-3 per split and kind,
and which cases changed. Nothing is fitted, so nothing is chosen on a split here: a variant
worth keeping must gain on the dev splits and lose nothing on the test splits.

Usage:
    .venv/bin/python -m lab.experiments.ranking_flags --variant 'fusion.weights.semantic=[0.2,0.8]' \
        [--variant ...] [--work DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.evaluation.kinds import say
from service.settings import PROJECT_ROOT as ROOT

SETS = tuple(sorted((ROOT / "bench" / "queries").glob("*.yaml")))


@dataclass(frozen=True)
class Ranked:
    """One case's phase-3 result as `eval-kinds --cases` writes it."""

    corpus: str
    case_id: str
    split: str
    kind: str
    query: str
    rank: int | None
    """1-based rank of the first right page (None: not in the first ten)."""


def run_variant(name: str, overrides: Sequence[str], work: Path) -> list[Ranked]:
    """Every set ranked at phase 3 with `overrides` (flag=value each)."""
    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    out: list[Ranked] = []
    for queries in SETS:
        cases = folder / f"{queries.stem}.json"
        if not cases.is_file():  # a run cut short resumes where it stopped
            command = [sys.executable, "-m", "lab", "eval-kinds", "--queries", str(queries), "--phase", "3",
                       "--cases", str(cases), "--data-dir", str(folder / "data")]
            for flag in overrides:
                command += ["--set", flag]
            say(f"{name}: {queries.stem}")
            subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for case in json.loads(cases.read_text(encoding="utf-8"))["3"]:
            out.append(Ranked(queries.stem, case["id"], case["split"], case["kind"], case["query"], case["rank"]))
    return out


def _top(rank: int | None, k: int) -> bool:
    return rank is not None and rank <= k


def compare(base: Sequence[Ranked], variant: Sequence[Ranked]) -> list[str]:
    """Top-1 / top-3 per split and kind, base → variant, then the cases whose top-1 changed."""
    theirs = {(r.corpus, r.case_id): r for r in variant}
    counts: Counter[tuple[str, str, str]] = Counter()
    changed: list[str] = []
    for mine in base:
        other = theirs[(mine.corpus, mine.case_id)]
        for split_kind in ((mine.split, mine.kind), (mine.split, "all")):
            counts[(*split_kind, "n")] += 1
            counts[(*split_kind, "base1")] += _top(mine.rank, 1)
            counts[(*split_kind, "var1")] += _top(other.rank, 1)
            counts[(*split_kind, "base3")] += _top(mine.rank, 3)
            counts[(*split_kind, "var3")] += _top(other.rank, 3)
        if _top(mine.rank, 1) != _top(other.rank, 1):
            sign = "+" if _top(other.rank, 1) else "-"
            changed.append(f"  {sign} {mine.corpus} {mine.split} {mine.kind}: {mine.query!r}")
    lines = ["| split | kind | cases | top-1 | top-3 |", "|---|---|--:|--:|--:|"]
    for split in ("dev", "test"):
        kinds = [*sorted({k for s, k, _ in counts if s == split and k != "all"}), "all"]
        for kind in kinds:
            key = (split, kind)
            lines.append(f"| {split} | {kind} | {counts[(*key, 'n')]} | {counts[(*key, 'base1')]} → "
                         f"{counts[(*key, 'var1')]} | {counts[(*key, 'base3')]} → {counts[(*key, 'var3')]} |")
    return [*lines, "", f"top-1 changed for {len(changed)} cases:", *changed]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", action="append", required=True,
                        help="flag overrides, ';' between several: 'fusion.weights.mixed=[0.3,0.7]'")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ranking-flags"),
                        help="databases and per-set results (reused when present)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    base = run_variant("baseline", (), args.work)
    report = ["python -m lab.experiments.ranking_flags " + " ".join(f"--variant '{v}'" for v in args.variant),
              f"{len(SETS)} labelled sets, phase 3, base = the flags in force", ""]
    for variant in args.variant:
        overrides = [part.strip() for part in variant.split(";") if part.strip()]
        folder = "variant-" + hashlib.sha256(";".join(overrides).encode()).hexdigest()[:12]
        report += [f"## {variant}", "", *compare(base, run_variant(folder, overrides, args.work)), ""]
    text = "\n".join(report)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
        say(f"wrote {args.out}")
    return 0


if __name__ == "__main__":  # the rst reader's worker process is spawned: import-safe
    sys.exit(main())
