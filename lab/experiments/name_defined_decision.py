"""Does "the first page defines the name the query asks for" help the decision? (issue 40/42)

Identifier queries are ranked well (the identifier cases find their page first on nine of
twelve sets at ≥ 95 %) yet many are asked about: a one-word query gets a low p
(`tokens` weighs against it). The keyword index knows where a name is defined (a heading naming
it, an API entry, a configuration table's key, a link naming it: service/ingest/identifiers.py),
and the decision does not see it. This adds, offline, one feature to the recorded runs at phase 3:

  top_defines_name   1 when the query holds a name (`NormalizedQuery.identifiers`) that the run's
                     first page defines (its page-level names, as the keyword index reads them),
                     else 0

then makes the portable fit without each corpus in turn and replays it, as
`relevance_decision` does for its scores (same tables).

Usage:
    .venv/bin/python -m lab.experiments.name_defined_decision \
        --set bench/queries/seed.yaml=/tmp/loco/seed.json ... [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from lab.experiments.relevance_decision import (
    PHASE,
    Loaded,
    load_set,
    phase3_runs,
    report,
    run_variant,
)
from service.evaluation.decisions import Collected

FEATURE = "top_defines_name"


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def defined_by_top_page(loaded: Loaded) -> dict[str, float]:
    """Per case id: 1.0 when the phase-3 run's first page defines a name the query holds."""
    from lab.evaluation.kinds import corpus_dir, read_corpus
    from service.domain.identifiers import compact_key, whole_key
    from service.flags import load_flags
    from service.ingest.identifiers import identifiers_of
    from service.normalize.lexicon import Synonyms, load_synonyms
    from service.normalize.query import normalize_query
    from service.scoring.indexes import build_indexes
    from service.settings import load_settings
    from service.wiring import SYNONYMS_FILE

    settings = load_settings()
    flags = load_flags(settings.flags_file)
    folder = corpus_dir(loaded.corpus, settings, None)
    documents, chunks = read_corpus(folder, flags)
    synonyms_file = folder / SYNONYMS_FILE
    indexes = build_indexes(documents, chunks, load_synonyms(synonyms_file) if synonyms_file.is_file() else Synonyms())
    linked: dict[str, list[str]] = {}
    for chunk in chunks:  # as the keyword index reads a page's names (service/scoring/indexes.py)
        linked.setdefault(chunk.doc_slug, []).extend(chunk.linked_names)
    defined: dict[str, set[str]] = {}
    for doc in documents:
        shown = identifiers_of(doc.content, (doc.title,), dict.fromkeys(linked.get(doc.slug, ())))
        defined[doc.slug] = {k for i in shown if i.defined for k in (whole_key(i.name), compact_key(i.name))}
    queries = {c.id: c.query for c in loaded.cases}
    out: dict[str, float] = {}
    for run in phase3_runs(loaded):
        query, _ = normalize_query(queries[run.case_id], indexes.lexicon)
        top = run.ranked[0] if run.ranked else None
        asked = {k for n in query.identifiers for k in (whole_key(n), compact_key(n))}
        out[run.case_id] = float(top is not None and bool(asked & defined.get(top, set())))
    say(f"{loaded.corpus}: {int(sum(out.values()))} of {len(out)} runs' first page defines a name the query holds")
    return out


def with_feature(collected: Collected, values: Mapping[str, float]) -> Collected:
    runs = []
    for run in collected.runs:
        value = values.get(run.case_id, 0.0) if run.phase == PHASE and run.policy == "seed_rules" else 0.0
        runs.append(msgspec.structs.replace(run, features={**run.features, FEATURE: value}))
    return msgspec.structs.replace(collected, runs=runs)


def signal_auc(sets: Sequence[Loaded], values: Mapping[str, float]) -> dict[str, dict[str, float]]:
    from lab.experiments.relevance_decision import auc
    from service.evaluation.decision_metrics import top_is_right

    out: dict[str, dict[str, float]] = {}
    for split in ("dev", "test"):
        rows = []
        for s in sets:
            runs = {run.case_id: run for run in phase3_runs(s)}
            rows += [(values.get(c.id, 0.0), top_is_right(c, runs[c.id].ranked)) for c in s.cases if c.split == split]
        out[split] = {FEATURE: auc([v for v, _ in rows], [r for _, r in rows])}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", required=True, help="QUERIES.yaml=SIGNALS.json, one per corpus")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    sets = [load_set(spec) for spec in args.set]
    values: dict[str, float] = {}
    for loaded in sets:
        values.update(defined_by_top_page(loaded))
    results = {
        "without (the service's 23 features)": run_variant(sets, [s.collected for s in sets], ()),
        f"+ {FEATURE}": run_variant(sets, [with_feature(s.collected, values) for s in sets], (FEATURE,)),
    }
    runs = [r for s in sets for r in phase3_runs(s)]
    text = report(results, signal_auc(sets, values),
                  {"best": len(runs), "first": 0, "none": sum(not r.ranked for r in runs)})
    print(text)
    if args.out is not None:
        command = "python -m lab.experiments.name_defined_decision " + " ".join(f"--set {s}" for s in args.set)
        args.out.write_text(f"{command}\n\n{text}\n", encoding="utf-8")
        say(f"wrote {args.out}")
    return 0


if __name__ == "__main__":  # the rst reader's worker process is spawned: import-safe
    sys.exit(main())
