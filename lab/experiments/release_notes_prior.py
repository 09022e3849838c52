"""Choose `retrieval.release_notes_factor` leave-one-corpus-out (issue 34 item 6).

Usage: .venv/bin/python -m lab.experiments.release_notes_prior [--json FILE]

Every labelled set (bench/queries/*.yaml) runs through the service's own `Pipeline.run` at
phases 1 and 2, in memory (no database: `prepare` + `make_pipeline` + `load_corpus`, as
tests/unit/test_decision_paths.py does), once per factor of the grid. For each corpus in turn
the factor is chosen on the dev splits of the OTHER corpora (most right pages first, then in the
top 3, over phases 1 and 2; a tie goes to the fewest non-release questions answered or asked about
with a release page first, then to the factor nearest 1: the smallest intervention) and reported
on the held-out corpus's test split beside the prior switched off (1.0). The default the table
supports is chosen the same way on every corpus's dev split.

Release pages are the ones the service finds by structure (`indexes.release_notes_pages`);
release questions are the labelled cases marked `note: release question`. "Release page first"
counts a response whose answer's first page, or whose first option, is a release page, under
each decision policy (calibrated: the fit the service would load for that corpus).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from lab.evaluation.kinds import memory_pipeline, read_corpus
from service.evaluation.decision_metrics import CaseRun
from service.evaluation.decisions import policy_flags, run_case
from service.evaluation.labelled import KINDS, LabelledQuery, load_labelled_set
from service.flags import Flags
from service.scoring.indexes import release_notes_pages
from service.settings import PROJECT_ROOT as ROOT

GRID = (1.0, 0.5, 0.3, 0.2, 0.1)
PHASES = (1, 2)
POLICIES = ("seed_rules", "calibrated")
RELEASE_NOTE = "release question"
CORPORA: tuple[tuple[str, str], ...] = (
    ("bench/queries/seed.yaml", "seeds"),
    ("bench/queries/logseq.yaml", "tests/corpora/logseq-docs"),
    ("bench/queries/mkdocs.yaml", "tests/corpora/mkdocs-docs"),
    ("bench/queries/vite.yaml", "tests/corpora/vite-docs"),
    ("bench/queries/starlight.yaml", "tests/corpora/starlight-docs"),
    ("bench/queries/requests.yaml", "tests/corpora/requests-docs"),
)


@dataclass
class Counts:
    ranked: int = 0
    top1: int = 0
    top3: int = 0
    kinds: dict[str, list[int]] = field(default_factory=dict)
    """kind -> [ranked, top1, top3]"""
    non_release: int = 0
    release_first: dict[str, int] = field(default_factory=lambda: dict.fromkeys(POLICIES, 0))
    """Non-release cases whose response puts a release page first, per policy."""
    release_questions: int = 0
    release_top1: int = 0

    def add(self, other: Counts) -> None:
        self.ranked += other.ranked
        self.top1 += other.top1
        self.top3 += other.top3
        for kind, (n, t1, t3) in other.kinds.items():
            mine = self.kinds.setdefault(kind, [0, 0, 0])
            mine[0] += n
            mine[1] += t1
            mine[2] += t3
        self.non_release += other.non_release
        for policy, n in other.release_first.items():
            self.release_first[policy] += n
        self.release_questions += other.release_questions
        self.release_top1 += other.release_top1


@dataclass(frozen=True)
class Corpus:
    name: str
    cases: Sequence[LabelledQuery]
    release_pages: frozenset[str]
    runs: dict[tuple[float, int, str, str], CaseRun]
    """(factor, phase, policy, case id) -> the run."""


def first_page(run: CaseRun) -> str | None:
    pages = run.shown if run.status == "answer" else run.options if run.status == "clarify" else ()
    return pages[0] if pages else None


def counts(corpus: Corpus, factor: float, phase: int, split: str) -> Counts:
    c = Counts()
    for case in corpus.cases:
        if case.split != split:
            continue
        runs = {policy: corpus.runs[(factor, phase, policy, case.id)] for policy in POLICIES}
        ranked = runs["seed_rules"].ranked
        release = case.note == RELEASE_NOTE
        if case.pages:
            kind = c.kinds.setdefault(case.kind, [0, 0, 0])
            hit1, hit3 = bool(ranked) and ranked[0] in case.pages, any(p in case.pages for p in ranked[:3])
            c.ranked += 1
            c.top1 += hit1
            c.top3 += hit3
            kind[0] += 1
            kind[1] += hit1
            kind[2] += hit3
            if release:
                c.release_questions += 1
                c.release_top1 += hit1
        if not release:
            c.non_release += 1
            for policy, run in runs.items():
                c.release_first[policy] += first_page(run) in corpus.release_pages
    return c


def pooled(corpora: Sequence[Corpus], factor: float, split: str) -> Counts:
    total = Counts()
    for corpus in corpora:
        for phase in PHASES:
            total.add(counts(corpus, factor, phase, split))
    return total


def choose(corpora: Sequence[Corpus]) -> float:
    """The grid's factor with the most right pages first, then in the top 3, on the dev splits of
    `corpora`; then the fewest non-release questions with a release page first; then nearest 1."""
    def key(factor: float) -> tuple[int, int, int, float]:
        c = pooled(corpora, factor, "dev")
        return (c.top1, c.top3, -sum(c.release_first.values()), factor)

    return max(GRID, key=key)


async def run_corpus(queries: Path, seeds: Path) -> Corpus:
    name, cases = load_labelled_set(queries)
    base = Flags()
    documents, chunks = read_corpus(seeds, base)
    pipeline = memory_pipeline(seeds, base, documents, chunks)
    release_pages = release_notes_pages(chunks)
    runs: dict[tuple[float, int, str, str], CaseRun] = {}
    for factor in GRID:
        if release_pages or factor == GRID[0]:
            flags = msgspec.structs.replace(
                base, retrieval=msgspec.structs.replace(base.retrieval, release_notes_factor=factor),
            )
            for phase in PHASES:
                for policy in POLICIES:
                    for case in cases:
                        runs[(factor, phase, policy, case.id)] = await run_case(
                            pipeline, policy_flags(flags, policy), case, phase, policy,
                        )
        else:  # no release page: the factor changes nothing
            runs.update({(factor, *key[1:]): run for key, run in runs.items() if key[0] == GRID[0]})
    print(f"  {name}: {len(cases)} cases, release pages {sorted(release_pages) or 'none'}", file=sys.stderr)
    return Corpus(name=name, cases=cases, release_pages=release_pages, runs=runs)


def _pct(num: int, den: int) -> str:
    return f"{100 * num / den:.1f} %" if den else "–"


def _row(c: Counts) -> str:
    first = " / ".join(f"{c.release_first[p]}" for p in POLICIES)
    return (f"{_pct(c.top1, c.ranked)} | {_pct(c.top3, c.ranked)} | {first} of {c.non_release} | "
            f"{c.release_top1} of {c.release_questions}")


def report(corpora: Sequence[Corpus]) -> tuple[str, dict[str, object]]:
    chosen = {held.name: choose([c for c in corpora if c is not held]) for held in corpora}
    default = choose(corpora)
    lines = [
        "| held-out corpus | factor chosen without it | prior | top-1 | top-3 | non-release cases with a release "
        "page first (seed_rules / calibrated), of case-phase runs | release questions, top-1 right |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    data: dict[str, object] = {"grid": GRID, "phases": PHASES, "default": default, "corpora": {}}
    off_total, on_total = Counts(), Counts()
    for corpus in corpora:
        factor = chosen[corpus.name]
        off, on = Counts(), Counts()
        for phase in PHASES:
            off.add(counts(corpus, 1.0, phase, "test"))
            on.add(counts(corpus, factor, phase, "test"))
        off_total.add(off)
        on_total.add(on)
        lines.append(f"| {corpus.name} | {factor} | off (1.0) | {_row(off)} |")
        lines.append(f"| | | chosen ({factor}) | {_row(on)} |")
        assert isinstance(data["corpora"], dict)
        data["corpora"][corpus.name] = {"chosen": factor, "off": off.__dict__, "chosen_counts": on.__dict__}
    lines.append(f"| **pooled** | | off (1.0) | {_row(off_total)} |")
    lines.append(f"| | | leave-one-corpus-out | {_row(on_total)} |")
    kinds = ["", "Per kind, pooled over the held-out test splits (phases 1 and 2; top-1 / top-3):", "",
             "| kind | cases | off (1.0) | leave-one-corpus-out |", "|---|---:|---:|---:|"]
    for kind in KINDS:
        if kind not in off_total.kinds:
            continue
        n, a1, a3 = off_total.kinds[kind]
        _, b1, b3 = on_total.kinds[kind]
        kinds.append(f"| {kind} | {n} | {_pct(a1, n)} / {_pct(a3, n)} | {_pct(b1, n)} / {_pct(b3, n)} |")
    grid = ["", "The grid on every corpus's dev split (what the default is chosen on; phases 1 and 2):", "",
            "| factor | top-1 | top-3 | non-release cases with a release page first (seed_rules / calibrated), of case-phase runs | "
            "release questions, top-1 right |", "|---:|---:|---:|---:|---:|"]
    for factor in GRID:
        grid.append(f"| {factor} | {_row(pooled(corpora, factor, 'dev'))} |")
    text = "\n".join([*lines, *kinds, *grid, "", f"Default the grid supports (chosen on every dev split): {default}"])
    return text, data


async def main_async(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.experiments.release_notes_prior", description=__doc__)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    corpora = [await run_corpus(ROOT / q, ROOT / s) for q, s in CORPORA]
    text, data = report(corpora)
    print(text)
    if args.json is not None:
        args.json.write_text(json.dumps(data, indent=2, default=list) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main_async(sys.argv[1:])))
