"""Does the first page survive losing a word of the query? A label-free decision feature (issue 40).

A query-performance predictor of the perturbation kind: a first page that the query's words agree
on stays first when any one of them is left out; a first page that one word alone carried (a stray
match on a common word, a paraphrase the ranking half understood) does not. For every case's
phase-3 run (recorded by `eval-decisions --cross-corpus --signals`), the query is ranked again by
phase 3 once per word of three letters or more left out (this checkout's `session.evidence`, the
service's fused ranking, an embedded PostgreSQL under DATA_DIR), and two features are added:

- `drop_one_kept`: the share of those rankings whose first page is the run's first page (1 for a
  query of one such word: there is nothing to leave out);
- `drop_one_rank`: the mean of 1 / (the run's first page's rank in them), 0 where it is absent.

Then, as `top_page_features` does, the portable fit is made without each corpus in turn and
replayed on it, without and with the features (same tables; the service's own features unchanged).

Usage:
    .venv/bin/python -m lab.experiments.drop_one_word --set bench/queries/seed.yaml=LOCO/seed.json ... \\
        [--values FILE] [--feature drop_one_kept] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lab.experiments.relevance_decision import Loaded, corpus_sessions, load_set, phase3_runs, say
from lab.experiments.top_page_features import command_line, compare_features

if TYPE_CHECKING:
    from service.settings import Settings

NAMES = ("drop_one_kept", "drop_one_rank")
WORD = re.compile(r"\S+")
MIN_LETTERS = 3
"""Words shorter than this ("a", "to", "my") are never left out: they carry no topic."""


def variants(query: str) -> list[str]:
    """The query once per word of `MIN_LETTERS` letters or more left out (none for one such word)."""
    spans = [m.span() for m in WORD.finditer(query) if sum(ch.isalnum() for ch in m.group()) >= MIN_LETTERS]
    if len(spans) < 2:
        return []
    return [" ".join((query[:start] + query[end:]).split()) for start, end in spans]


def features_of(first: str, rankings: Sequence[Sequence[str]]) -> dict[str, float]:
    if not rankings:
        return {"drop_one_kept": 1.0, "drop_one_rank": 1.0}
    kept = sum(bool(r) and r[0] == first for r in rankings) / len(rankings)
    rank = sum(1.0 / (list(r).index(first) + 1) if first in r else 0.0 for r in rankings) / len(rankings)
    return {"drop_one_kept": kept, "drop_one_rank": rank}


def compute(sets: Sequence[Loaded]) -> dict[str, dict[str, float]]:
    """Per case id, the two features of its phase-3 run (nothing for a run without a page)."""
    from service.db.server import run_with_database
    from service.settings import load_settings

    settings = load_settings()
    return run_with_database(settings, lambda dsn: _compute(dsn, settings, sets))


async def _compute(admin_dsn: str, settings: Settings, sets: Sequence[Loaded]) -> dict[str, dict[str, float]]:
    from lab.evaluation.kinds import page_ranking

    out: dict[str, dict[str, float]] = {}
    async for loaded, session, flags in corpus_sessions(admin_dsn, settings, sets):
        queries = {c.id: c.query for c in loaded.cases}
        for run in phase3_runs(loaded):
            if not run.ranked:
                continue
            rankings = []
            for variant in variants(queries[run.case_id]):
                evidence = await session.evidence(variant, flags, 3)
                rankings.append(page_ranking(e.doc_slug for e in evidence))
            out[run.case_id] = features_of(run.ranked[0], rankings)
        say(f"{loaded.corpus}: {len(phase3_runs(loaded))} runs")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", required=True, help="QUERIES.yaml=SIGNALS.json, one per corpus")
    parser.add_argument("--values", type=Path, help="per-case features: read when present, else computed and written")
    parser.add_argument("--feature", choices=NAMES, action="append", help="default: both")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    names = tuple(args.feature or NAMES)
    sets = [load_set(spec) for spec in args.set]
    if args.values is not None and args.values.is_file():
        values = json.loads(args.values.read_text(encoding="utf-8"))
    else:
        values = compute(sets)
        if args.values is not None:
            args.values.write_text(json.dumps(values), encoding="utf-8")
    by_feature = {name: {case: v[name] for case, v in values.items()} for name in NAMES}
    compare_features(sets, by_feature, names, command_line("lab.experiments.drop_one_word", names, args.set), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
