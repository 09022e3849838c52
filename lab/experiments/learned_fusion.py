"""Exploration for issue #19 (not part of the service): a learned page ranking for phase 3.

Collects, for every answerable case of each labelled set, phase 3's candidate pages with
signals the service already has (fused score, best cosine, share of query words matched,
title/keyword hit, exact title, seed points, chunks found, rank in each leg, and their
distance to the query's best), fits a pointwise logistic regression ("is this page right?")
on the dev splits, and ranks by it. Prints top-1 / top-3 per kind against today's fused
ranking: fitted on both dev splits ("pooled") and leave-one-corpus-out ("loco": fitted on the
other corpus's dev split only).

    .venv/bin/python -m lab.experiments.learned_fusion [C]
"""

from __future__ import annotations

import collections
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from lab.evaluation.kinds import corpus_dir, corpus_of, open_session, ranked_cases
from service.db.server import run_with_database
from service.evaluation.labelled import load_query_set
from service.flags import load_flags
from service.settings import load_settings

QUERY_SETS = (Path("bench/queries/seed.yaml"), Path("bench/queries/logseq.yaml"))
SIGNALS = ("fused", "cos", "matched", "title_hit", "exact_title", "raw", "chunks", "kw_rank", "sem_rank")
Case = dict[str, Any]


async def collect(dsn: str, query_set: Path) -> list[Case]:
    settings = load_settings()
    flags = load_flags(settings.flags_file)
    cases = load_query_set(query_set)
    corpus = corpus_of(query_set)
    session, pool = await open_session(dsn, settings, flags, corpus_dir(corpus, settings, None), corpus)
    out: list[Case] = []
    try:
        pipeline = session.pipeline
        for case in ranked_cases(cases):
            query, notes = pipeline.normalise(case.query, flags)
            found = await pipeline.hybrid().retrieve(query, flags, notes=notes)
            tokens = max(len(query.tokens), 1)
            keyword_pages = list(dict.fromkeys(e.doc_slug for e in found.keyword))
            semantic_pages = list(dict.fromkeys(h.doc_slug for h in sorted(found.hits, key=lambda h: -h.similarity)))
            pages: dict[str, dict[str, float]] = {}
            for e in found.fused:
                page = pages.setdefault(e.doc_slug, dict.fromkeys(SIGNALS, 0.0))
                page["fused"] = max(page["fused"], e.score)
                page["matched"] = max(page["matched"], len(e.matched_terms) / tokens)
                page["title_hit"] = max(page["title_hit"], float(bool(e.title_or_keyword_hit)))
                page["exact_title"] = max(page["exact_title"], float(bool(e.exact_title_phrase)))
                page["raw"] = max(page["raw"], float(e.raw_score or 0))
                page["chunks"] += 1
            for hit in found.hits:
                if hit.doc_slug in pages:
                    pages[hit.doc_slug]["cos"] = max(pages[hit.doc_slug]["cos"], hit.similarity)
            for slug, page in pages.items():
                page["kw_rank"] = 1 / (1 + keyword_pages.index(slug)) if slug in keyword_pages else 0.0
                page["sem_rank"] = 1 / (1 + semantic_pages.index(slug)) if slug in semantic_pages else 0.0
            out.append({
                "kind": case.kind, "split": case.split, "pages": set(case.pages), "tokens": len(query.tokens),
                "qtype": query.query_type, "fused_ranking": list(dict.fromkeys(e.doc_slug for e in found.fused)),
                "candidates": pages,
            })
    finally:
        await pool.close()
    return out


def features(case: Case, page: dict[str, float]) -> list[float]:
    """The page's signals, their distance to the query's best, and query-level signals."""
    candidates = case["candidates"].values()
    best_matched = max(c["matched"] for c in candidates)
    top_cos = max(c["cos"] for c in candidates)
    top_raw = max(c["raw"] for c in candidates) or 1.0
    top_fused = max(c["fused"] for c in candidates) or 1.0
    return [
        *(page[name] for name in SIGNALS),
        page["raw"] / top_raw, page["fused"] / top_fused, top_cos - page["cos"], best_matched - page["matched"],
        page["cos"] * (1 - best_matched), page["kw_rank"] * best_matched, float(case["tokens"]),
        float(case["qtype"] == "semantic"), float(case["qtype"] == "exact"),
    ]


def fit(cases: list[Case], c: float) -> Callable[[Case], list[str]]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x = np.array([features(case, page) for case in cases for page in case["candidates"].values()])
    y = np.array([int(slug in case["pages"]) for case in cases for slug in case["candidates"]])
    scaler = StandardScaler().fit(x)
    model = LogisticRegression(C=c, max_iter=5000).fit(scaler.transform(x), y)

    def rank(case: Case) -> list[str]:
        slugs = list(case["candidates"])
        if not slugs:
            return []
        scores = model.decision_function(scaler.transform(np.array([features(case, case["candidates"][s]) for s in slugs])))
        return [slugs[i] for i in np.argsort(-scores, kind="stable")]

    return rank


def per_kind(cases: list[Case], rank: Callable[[Case], list[str]]) -> dict[str, tuple[float, float, int]]:
    positions: dict[str, list[int | None]] = collections.defaultdict(list)
    for case in cases:
        ranking = rank(case)[:10]
        position = next((i for i, slug in enumerate(ranking) if slug in case["pages"]), None)
        positions[case["kind"]].append(position)
        positions["all"].append(position)
    return {kind: (100 * sum(p == 0 for p in ps) / len(ps), 100 * sum(p is not None and p < 3 for p in ps) / len(ps),
                   len(ps)) for kind, ps in positions.items()}


def main() -> None:
    c = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    sets: dict[str, list[Case]] = {}
    for query_set in QUERY_SETS:
        sets[query_set.stem] = run_with_database(load_settings(), functools.partial(collect, query_set=query_set))
    dev = {name: [case for case in cases if case["split"] == "dev"] for name, cases in sets.items()}
    pooled = fit([case for cases in dev.values() for case in cases], c)
    for name, cases in sets.items():
        loco = fit([case for other, d in dev.items() if other != name for case in d], c)
        for split in ("dev", "test"):
            mine = [case for case in cases if case["split"] == split]
            rows = {label: per_kind(mine, rank) for label, rank in
                    (("fused", lambda case: case["fused_ranking"]), ("pooled", pooled), ("loco", loco))}
            for kind in rows["fused"]:
                cells = "  ".join(f"{label} {r[kind][0]:5.1f}/{r[kind][1]:5.1f}" for label, r in rows.items())
                print(f"{name:6s} {split:4s} {kind:12s} n={rows['fused'][kind][2]:3d}  {cells}")


if __name__ == "__main__":
    main()
