"""Would searching each need of a two-need message with phase 3 find its page better than the
keyword search the decision reads today? (issue 40 item 4; measured, not built)

Today a multi-intent message's parts ("build a websocket chat endpoint" / "test it with pytest")
are searched by the keyword index alone (`tiers.part_rankings`), and the decision offers both
needs' pages when each part's first page is strong. Here every labelled multi-intent case with
two pages runs, part by part, through phase 3 as the service ranks it (keyword leg with names,
fusion, page priors), the semantic leg held in memory and exact (`sentence_vectors.InMemoryLeg`),
and through the keyword search alone. For each: are the two labelled pages the parts' first pages,
and are they among the whole message's first three pages (what the decision shows already)?

Usage:
    .venv/bin/python -m lab.experiments.multi_part_search [--out FILE]   (a few minutes)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lab.evaluation.kinds import TEST_CORPORA, page_ranking, read_corpus
from lab.experiments.sentence_vectors import InMemoryLeg
from service.settings import PROJECT_ROOT

SETS = ("seed", "logseq", "mkdocs", "vite", "starlight", "requests", "starlette", "foam", "helix", "pinia",
        "prettier", "restic")
DEFAULT_OUT = PROJECT_ROOT / "lab" / "results" / "kinds" / "multi-part-search-2026-11-29.txt"


def folder_of(name: str) -> Path:
    return PROJECT_ROOT / "seeds" if name == "seed" else TEST_CORPORA / f"{name}-docs"


async def measure_set(name: str, embedder: Any, flags: Any) -> list[dict[str, Any]]:
    """One row per two-page multi-intent case: its pages, each part's first page both ways, the
    whole message's first three pages at phase 3."""
    from service.decide.seed_rules import distinct_documents
    from service.evaluation.labelled import load_labelled_set, split_of
    from service.ingest.representations import passage_context
    from service.pipeline import TierContext
    from service.wiring import make_pipeline

    folder = folder_of(name)
    documents, chunks = read_corpus(folder, flags)
    chunks = sorted(chunks, key=lambda c: (c.doc_slug, c.chunk_index))
    vectors = embedder.embed_passages([(passage_context(c.header_path, c.title), c.content) for c in chunks])
    leg = InMemoryLeg(embedder, chunks, vectors, np.arange(len(chunks)))
    pipeline = make_pipeline(folder, lambda: flags, semantic=lambda: leg)
    pipeline.load_corpus(documents, chunks, 1)
    indexes = pipeline.require_indexes()
    _, cases = load_labelled_set(PROJECT_ROOT / "bench" / "queries" / f"{name}.yaml")
    rows = []
    for case in cases:
        if case.kind != "multi_intent" or len(case.pages) < 2:
            continue
        query, notes = pipeline.normalise(case.query, flags)
        whole = await pipeline.hybrid_tier.run(TierContext(query=query, notes=notes, category=None, flags=flags,
                                                          top_k=10))
        fused_firsts, keyword_firsts = [], []
        for piece in pieces_of(case.query):
            part, part_notes = pipeline.normalise(piece, flags)
            if not part.tokens:
                continue
            ctx = TierContext(query=part, notes=part_notes, category=None, flags=flags, top_k=10)
            fused = page_ranking(e.doc_slug for e in (await pipeline.hybrid_tier.run(ctx)).ranking)
            keyword = distinct_documents(indexes.chunks.search(part.tokens, limit=10, lexical=flags.lexical), 1)
            fused_firsts += fused[:1]
            keyword_firsts += [e.doc_slug for e in keyword]
        rows.append({"set": name, "id": case.id, "split": split_of(case.id), "query": case.query,
                     "pages": case.pages[:2], "whole": page_ranking(e.doc_slug for e in whole.ranking)[:3],
                     "fused": fused_firsts, "keyword": keyword_firsts})
    return rows


def pieces_of(message: str) -> list[str]:
    """The message's parts as the normaliser splits them (`and`, `or`, `+`, `&`, `,`, `;`)."""
    from service.normalize.query import _INTENT_SPLIT

    return [p.strip() for p in _INTENT_SPLIT.split(message) if p.strip()]


def report(rows: Sequence[dict[str, Any]]) -> str:
    tally: Counter[tuple[str, str]] = Counter()
    for row in rows:
        need, whole = set(row["pages"]), set(row["whole"])
        for way in ("keyword", "fused"):
            firsts = set(row[way])
            tally[(row["split"], f"{way}: both pages are the parts' first")] += need <= firsts
            tally[(row["split"], f"{way}: ... and not among the message's first three")] += \
                need <= firsts and not need <= whole
        tally[(row["split"], "both among the message's first three")] += need <= whole
        tally[(row["split"], "cases")] += 1
    lines = ["| split | measure | cases |", "|---|---|--:|"]
    lines += [f"| {split} | {what} | {n} |" for (split, what), n in sorted(tally.items())]
    lines += ["", "Cases where the two ways differ (pages; whole message's first three; parts' first pages):"]
    for row in rows:
        need = set(row["pages"])
        if (need <= set(row["fused"])) != (need <= set(row["keyword"])):
            lines.append(f"- {row['split']} {row['set']} {row['query']!r}: {row['pages']}; whole {row['whole']}; "
                         f"fused {row['fused']}; keyword {row['keyword']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from service.evaluation.harness import load_cached_embedder
    from service.flags import load_flags
    from service.settings import load_settings

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    settings = load_settings()
    flags = load_flags(settings.flags_file)
    embedder = load_cached_embedder(settings, flags.embedding.backend)
    rows = [row for name in SETS for row in asyncio.run(measure_set(name, embedder, flags))]
    text = report(rows)
    print(text)
    args.out.write_text(f"python -m lab.experiments.multi_part_search\n\n{text}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":  # the rst reader's worker process is spawned: import-safe
    sys.exit(main())
