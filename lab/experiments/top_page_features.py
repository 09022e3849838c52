"""Label-free facts about the first page as decision features (issue 40: p's separation is the limit).

Each `--feature` adds, offline, one feature to the recorded runs at phase 3, then the portable
fit is made without each corpus in turn and replayed on it, as `relevance_decision` does for its
scores (same tables):

- `top_defines_name`: 1 when the query holds a name (`NormalizedQuery.identifiers`) that the run's
  first page defines (its page-level names, as the keyword index reads them), else 0. Identifier
  queries are ranked well yet many are asked about (a one-word query gets a low p); the keyword
  index knows where a name is defined, the decision does not.
- `name_focus`: for the query's names the corpus shows, the largest 1 / (pages showing it) among
  those the first page shows, else 0. A name few pages show pins its page down, which the
  ranking's scores do not say (a one-word query's BM25F gap is small either way).
- `top_page_words`: log(1 + the first page's words). Short pages (a glossary entry, an index)
  come first for questions put in other words more often than long ones.
- `common_share`, `informative_tokens`: the share of the query's content tokens that more than
  half the corpus's pages hold (a product's name, "use", "file"), and the count of the others.
  p counts every content token alike (`tokens`, `matched_share`), though a word every page holds
  matches any first page.

- `phase1_rank`, `phase1_agrees`, `phase2_rank`, `semantic_rank`: where phase 3's first page
  stands in another ranking of the same query the runs record (phase 1's whole pages, phase 2's
  chunks, the semantic leg's pages), as 1 / rank (0 outside the ten recorded) or 1 when first.
  Rankings that read the query another way agree more often on a right page; `phase1_rank` paid
  and is the service's `whole_page_rank` since 2026-11-29 (on runs collected since, it is there
  already).
- `phase1_runner_up_rank`: where phase 1 ranks phase 3's second page (1 / rank): phase 1
  preferring the runner-up would say the first page is the wrong one of two (not kept).
- `phase1_score_ratio`, `phase1_matched_share`: those features of the same query's phase-1 run
  (how level phase 1's first two pages are; how much of the query its first page matched).

`--informative-counts` instead replaces two of the service's own features at phase 3 for queries
that hold such a word and another: `tokens` counts only the other words, and `matched_share` is
the share of those the first page holds (its title and text, by match key).

Usage:
    .venv/bin/python -m lab.experiments.top_page_features --feature top_page_words \
        --set bench/queries/seed.yaml=/tmp/loco/seed.json ... [--out FILE]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from lab.experiments.relevance_decision import (
    PHASE,
    Loaded,
    load_set,
    phase3_runs,
    report,
    run_variant,
    say,
)
from service.evaluation.decisions import Collected

if TYPE_CHECKING:
    from service.domain.types import Document
    from service.ingest.identifiers import Identifier
    from service.normalize.lexicon import Lexicon


def top_page_words(loaded: Loaded) -> dict[str, float]:
    """Per case id: log(1 + words of the phase-3 run's first page's text); 0 without a page."""
    from lab.evaluation.kinds import corpus_dir, read_corpus
    from service.flags import load_flags
    from service.settings import load_settings

    settings = load_settings()
    documents, _ = read_corpus(corpus_dir(loaded.corpus, settings, None), load_flags(settings.flags_file))
    words = {doc.slug: len(doc.content.split()) for doc in documents}
    return {run.case_id: math.log1p(words.get(run.ranked[0], 0)) if run.ranked else 0.0 for run in phase3_runs(loaded)}


def _names_of(loaded: Loaded) -> tuple[list[Document], list[tuple[Identifier, ...]], Lexicon]:
    """The corpus's pages, each page's names (`page_names`, as the keyword index reads them) and
    the lexicon a query of it is normalised with."""
    from lab.evaluation.kinds import corpus_dir, read_corpus
    from service.flags import load_flags
    from service.normalize.lexicon import Synonyms, load_synonyms
    from service.scoring.indexes import build_indexes, page_names
    from service.settings import load_settings
    from service.wiring import SYNONYMS_FILE

    settings = load_settings()
    folder = corpus_dir(loaded.corpus, settings, None)
    documents, chunks = read_corpus(folder, load_flags(settings.flags_file))
    synonyms_file = folder / SYNONYMS_FILE
    indexes = build_indexes(documents, chunks, load_synonyms(synonyms_file) if synonyms_file.is_file() else Synonyms())
    return documents, page_names(documents, chunks), indexes.lexicon


def top_defines_name(loaded: Loaded) -> dict[str, float]:
    """Per case id: 1.0 when the phase-3 run's first page defines a name the query holds."""
    from service.domain.identifiers import compact_key, whole_key
    from service.normalize.query import normalize_query

    documents, names, lexicon = _names_of(loaded)
    defined = {doc.slug: {k for i in shown if i.defined for k in (whole_key(i.name), compact_key(i.name))}
               for doc, shown in zip(documents, names, strict=True)}
    queries = {c.id: c.query for c in loaded.cases}
    out: dict[str, float] = {}
    for run in phase3_runs(loaded):
        query, _ = normalize_query(queries[run.case_id], lexicon)
        top = run.ranked[0] if run.ranked else None
        asked = {k for n in query.identifiers for k in (whole_key(n), compact_key(n))}
        out[run.case_id] = float(top is not None and bool(asked & defined.get(top, set())))
    say(f"{loaded.corpus}: {int(sum(out.values()))} of {len(out)} runs' first page defines a name the query holds")
    return out


def name_focus(loaded: Loaded) -> dict[str, float]:
    """Per case id: max over the query's names the first page shows of 1 / pages showing it."""
    from service.domain.identifiers import compact_key, whole_key
    from service.normalize.query import normalize_query
    from service.scoring.indexes import pages_by_name

    documents, names, lexicon = _names_of(loaded)
    shown_on = pages_by_name(documents, names)  # as the service's `CorpusIndexes.pinned_pages` reads it
    queries = {c.id: c.query for c in loaded.cases}
    out: dict[str, float] = {}
    for run in phase3_runs(loaded):
        query, _ = normalize_query(queries[run.case_id], lexicon)
        top = run.ranked[0] if run.ranked else None
        focus = 0.0
        for name in query.identifiers:
            pages = shown_on.get(whole_key(name)) or shown_on.get(compact_key(name)) or frozenset()
            if top in pages:
                focus = max(focus, 1.0 / len(pages))
        out[run.case_id] = focus
    say(f"{loaded.corpus}: {sum(v > 0 for v in out.values())} of {len(out)} runs' first page shows a name the query holds")
    return out


COMMON_SHARE = 0.5
"""A word more than this share of the corpus's pages hold says little about which page is meant."""


def _page_words(loaded: Loaded) -> tuple[Lexicon, dict[str, set[str]], frozenset[str]]:
    """The lexicon, each page's match keys (title and text), and the keys of the words more than
    `COMMON_SHARE` of the pages hold."""
    from collections import Counter

    from service.normalize.text import match_key

    documents, _, lexicon = _names_of(loaded)
    held = {doc.slug: {match_key(t) for t in lexicon.normalise(f"{doc.title} {doc.content}")} for doc in documents}
    pages = Counter(key for keys in held.values() for key in keys)
    limit = COMMON_SHARE * len(documents)
    return lexicon, held, frozenset(key for key, count in pages.items() if count > limit)


def _query_words(loaded: Loaded) -> dict[str, tuple[int, int]]:
    """Per case id: (the query's content tokens, how many of them are common words)."""
    from service.normalize.query import normalize_query
    from service.normalize.text import match_key

    lexicon, _, common = _page_words(loaded)
    out: dict[str, tuple[int, int]] = {}
    for case in loaded.cases:
        query, _ = normalize_query(case.query, lexicon)
        out[case.id] = (len(query.tokens), sum(match_key(t) in common for t in query.tokens))
    return out


def common_share(loaded: Loaded) -> dict[str, float]:
    """Per case id: the share of the query's content tokens that more than half the pages hold
    (a product's name, "use", "file"): they match everywhere, so matching them says little."""
    counts = _query_words(loaded)
    say(f"{loaded.corpus}: {sum(c > 0 for _, c in counts.values())} of {len(counts)} queries hold a common word")
    return {case: common / max(tokens, 1) for case, (tokens, common) in counts.items()}


def informative_tokens(loaded: Loaded) -> dict[str, float]:
    """Per case id: the query's content tokens that at most half the pages hold."""
    return {case: float(tokens - common) for case, (tokens, common) in _query_words(loaded).items()}


def informative_counts(loaded: Loaded) -> dict[str, dict[str, float]]:
    """Per case id: the phase-3 run's features with `tokens` and `matched_share` over the query's
    words that at most half the pages hold (unchanged when the query holds none or only those)."""
    from service.normalize.query import normalize_query
    from service.normalize.text import match_key

    lexicon, held, common = _page_words(loaded)
    queries = {c.id: c.query for c in loaded.cases}
    out: dict[str, dict[str, float]] = {}
    for run in phase3_runs(loaded):
        query, _ = normalize_query(queries[run.case_id], lexicon)
        keys = [match_key(t) for t in query.tokens]
        informative = [k for k in keys if k not in common]
        features = dict(run.features)
        if informative and len(informative) < len(keys):
            top = held.get(run.ranked[0], set()) if run.ranked else set()
            features["tokens"] = float(len(informative))
            features["matched_share"] = sum(k in top for k in informative) / len(informative)
        out[run.case_id] = features
    say(f"{loaded.corpus}: {sum(out[r.case_id] != r.features for r in phase3_runs(loaded))} of {len(out)} runs' counts replaced")
    return out


def with_counts(collected: Collected, features: Mapping[str, dict[str, float]]) -> Collected:
    """A copy of the runs with phase 3's seed-rules runs' features replaced by `features`."""
    runs = [msgspec.structs.replace(run, features=features[run.case_id])
            if run.phase == PHASE and run.policy == "seed_rules" else run for run in collected.runs]
    return msgspec.structs.replace(collected, runs=runs)


def compare_counts(sets: Sequence[Loaded], command: str, out: Path | None) -> str:
    """The leave-one-out table with the service's features and with `informative_counts`."""
    replaced = [with_counts(s.collected, informative_counts(s)) for s in sets]
    results = {
        "without (the service's own features)": run_variant(sets, [s.collected for s in sets], ()),
        "tokens and matched_share over informative words": run_variant(sets, replaced, ()),
    }
    runs = [r for s in sets for r in phase3_runs(s)]
    text = report(results, {"dev": {}, "test": {}}, {"best": len(runs), "first": 0, "none": sum(not r.ranked for r in runs)})
    print(text)
    if out is not None:
        out.write_text(f"{command}\n\n{text}\n", encoding="utf-8")
        say(f"wrote {out}")
    return text


def _rank_in_phase(loaded: Loaded, phase: int = 1) -> dict[str, float]:
    """Per case id: 1 / rank of the phase-3 run's first page in the same query's ranking at
    `phase` (phase 1: the keyword index over whole pages), 0 when that ranking does not hold it."""
    first = {r.case_id: r.ranked for r in loaded.collected.runs if r.phase == phase and r.policy == "seed_rules"}
    out: dict[str, float] = {}
    for run in phase3_runs(loaded):
        ranked = first.get(run.case_id, ())
        top = run.ranked[0] if run.ranked else None
        out[run.case_id] = 1.0 / (ranked.index(top) + 1) if top in ranked else 0.0
    return out


def phase1_agrees(loaded: Loaded) -> dict[str, float]:
    """Per case id: 1 when phase 1 (the seed formula over whole pages) ranks the same page first."""
    return {case: float(rank == 1.0) for case, rank in _rank_in_phase(loaded).items()}


def phase1_rank(loaded: Loaded) -> dict[str, float]:
    """Per case id: the reciprocal rank of phase 3's first page in phase 1's ranking."""
    return _rank_in_phase(loaded)


def phase1_runner_up_rank(loaded: Loaded) -> dict[str, float]:
    """Per case id: the reciprocal rank of phase 3's second page in phase 1's ranking (phase 1
    preferring the runner-up says the first page may be the wrong one of two)."""
    first = {r.case_id: r.ranked for r in loaded.collected.runs if r.phase == 1 and r.policy == "seed_rules"}
    out: dict[str, float] = {}
    for run in phase3_runs(loaded):
        ranked = first.get(run.case_id, ())
        second = run.ranked[1] if len(run.ranked) > 1 else None
        out[run.case_id] = 1.0 / (ranked.index(second) + 1) if second in ranked else 0.0
    return out


def phase2_rank(loaded: Loaded) -> dict[str, float]:
    """Per case id: the reciprocal rank of phase 3's first page in phase 2's ranking (chunks)."""
    return _rank_in_phase(loaded, 2)


def semantic_rank(loaded: Loaded) -> dict[str, float]:
    """Per case id: the reciprocal rank of phase 3's first page in its semantic leg's pages."""
    out: dict[str, float] = {}
    for run in phase3_runs(loaded):
        top = run.ranked[0] if run.ranked else None
        ranked = list(run.semantic_ranked)
        out[run.case_id] = 1.0 / (ranked.index(top) + 1) if top in ranked else 0.0
    return out


def _phase_one_feature(loaded: Loaded, name: str) -> dict[str, float]:
    """Per case id: feature `name` of the same query's phase-1 run (0 without one)."""
    first = {r.case_id: r.features.get(name, 0.0) for r in loaded.collected.runs
             if r.phase == 1 and r.policy == "seed_rules"}
    return {run.case_id: first.get(run.case_id, 0.0) for run in phase3_runs(loaded)}


def phase1_score_ratio(loaded: Loaded) -> dict[str, float]:
    """Per case id: phase 1's second page's score over its first (how level the whole pages are)."""
    return _phase_one_feature(loaded, "score_ratio")


def phase1_matched_share(loaded: Loaded) -> dict[str, float]:
    """Per case id: the share of the query's words phase 1's first page matched."""
    return _phase_one_feature(loaded, "matched_share")


FEATURES: dict[str, Callable[[Loaded], dict[str, float]]] = {
    "common_share": common_share,
    "phase1_matched_share": phase1_matched_share,
    "phase1_score_ratio": phase1_score_ratio,
    "phase2_rank": phase2_rank,
    "semantic_rank": semantic_rank,
    "phase1_agrees": phase1_agrees,
    "phase1_rank": phase1_rank,
    "phase1_runner_up_rank": phase1_runner_up_rank,
    "informative_tokens": informative_tokens,
    "name_focus": name_focus,
    "top_defines_name": top_defines_name,
    "top_page_words": top_page_words,
}


def with_feature(collected: Collected, name: str, values: Mapping[str, float]) -> Collected:
    """A copy of the runs with `name` in every run's features (0 but at phase 3's seed-rules runs)."""
    runs = []
    for run in collected.runs:
        value = values.get(run.case_id, 0.0) if run.phase == PHASE and run.policy == "seed_rules" else 0.0
        runs.append(msgspec.structs.replace(run, features={**run.features, name: value}))
    return msgspec.structs.replace(collected, runs=runs)


def signal_auc(sets: Sequence[Loaded], name: str, values: Mapping[str, float]) -> dict[str, dict[str, float]]:
    from lab.experiments.relevance_decision import auc
    from service.evaluation.decision_metrics import top_is_right

    out: dict[str, dict[str, float]] = {}
    for split in ("dev", "test"):
        rows = []
        for s in sets:
            runs = {run.case_id: run for run in phase3_runs(s)}
            rows += [(values.get(c.id, 0.0), top_is_right(c, runs[c.id].ranked)) for c in s.cases if c.split == split]
        out[split] = {name: auc([v for v, _ in rows], [r for _, r in rows])}
    return out


def compare_features(
    sets: Sequence[Loaded], values: Mapping[str, Mapping[str, float]], names: Sequence[str],
    command: str, out: Path | None,
) -> str:
    """The leave-one-out table without and with `names` added to the runs (`values`: per feature,
    per case id; every feature of it gets its AUC alone), printed and written to `out` under
    `command`, the line that made it."""
    collected = [s.collected for s in sets]
    for name in names:
        collected = [with_feature(c, name, values[name]) for c in collected]
    results = {
        "without (the service's own features)": run_variant(sets, [s.collected for s in sets], ()),
        f"+ {', '.join(names)}": run_variant(sets, collected, names),
    }
    runs = [r for s in sets for r in phase3_runs(s)]
    aucs: dict[str, dict[str, float]] = {"dev": {}, "test": {}}
    for name, by_case in values.items():
        for split, by_name in signal_auc(sets, name, by_case).items():
            aucs[split].update(by_name)
    text = report(results, aucs, {"best": len(runs), "first": 0, "none": sum(not r.ranked for r in runs)})
    print(text)
    if out is not None:
        out.write_text(f"{command}\n\n{text}\n", encoding="utf-8")
        say(f"wrote {out}")
    return text


def command_line(module: str, names: Sequence[str], specs: Sequence[str]) -> str:
    return (f"python -m {module} " + " ".join(f"--feature {n}" for n in names) + " "
            + " ".join(f"--set {s}" for s in specs))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--feature", choices=sorted(FEATURES), action="append",
                        help="repeat to add several features together (one variant)")
    parser.add_argument("--informative-counts", action="store_true",
                        help="replace `tokens` and `matched_share` instead of adding a feature")
    parser.add_argument("--set", action="append", required=True, help="QUERIES.yaml=SIGNALS.json, one per corpus")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    sets = [load_set(spec) for spec in args.set]
    if args.informative_counts:
        command = ("python -m lab.experiments.top_page_features --informative-counts "
                   + " ".join(f"--set {s}" for s in args.set))
        compare_counts(sets, command, args.out)
        return 0
    if not args.feature:
        parser.error("--feature or --informative-counts")
    names = tuple(dict.fromkeys(args.feature))
    values: dict[str, dict[str, float]] = {name: {} for name in names}
    for loaded in sets:
        for name in names:
            values[name].update(FEATURES[name](loaded))
    compare_features(sets, values, names, command_line("lab.experiments.top_page_features", names, args.set), args.out)
    return 0


if __name__ == "__main__":  # the rst reader's worker process is spawned: import-safe
    sys.exit(main())
