"""Sentence vectors over the twelve labelled sets (issue 41 item 6: a label-free lever beside the
relevance model), through the service's own phase 3 (the 2026-11-27 night note's figures came
from `paraphrase_experiments`, whose keyword leg predates the names).

Every sentence of every chunk is embedded with the chunk's breadcrumb as context (as a body is),
and a chunk's semantic score becomes max(its body's cosine, its best sentence's cosine). Phase 3
then ranks exactly as the service does (`Pipeline.hybrid_tier`: keyword leg with names, fusion,
page priors, two chunks a page), with only the semantic leg swapped for an in-memory exact search
over the chosen vectors, so "body" reproduces the service's own phase-3 ranking (exact search,
`semantic.exact_search_max_vectors`). No database, no fitting: nothing here is chosen on a split.

Usage:
    .venv/bin/python -m lab.experiments.sentence_vectors --queries bench/queries/seed.yaml ... [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

VARIANTS = ("body", "max(body, sentence)")
KINDS = ("paraphrase", "question", "keyword", "typo")


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class InMemoryLeg:
    """The semantic leg over vectors held here: exact cosine, a chunk scored by its best vector."""

    embedder: Any
    chunks: list[Any]
    vectors: Any
    """(n, dim) normalised vectors."""
    owner: Any
    """The chunk (index into `chunks`) each vector belongs to."""

    async def search(self, text: str, top_k: int, category: str | None, flags: Any,
                     exact: bool = False) -> tuple[list[Any], dict[str, float]]:
        from service.scoring.semantic import SemanticHit

        query = self.embedder.embed_query(text)
        best = np.full(len(self.chunks), -2.0)
        np.maximum.at(best, self.owner, self.vectors @ query)
        if category:
            best[[c.category != category for c in self.chunks]] = -2.0
        order = sorted(range(len(self.chunks)), key=lambda i: (-best[i], self.chunks[i].doc_slug,
                                                               self.chunks[i].chunk_index))[:top_k]
        hits = [SemanticHit(chunk_id=f"{self.chunks[i].doc_slug}#{self.chunks[i].chunk_index}",
                            doc_slug=self.chunks[i].doc_slug, chunk_index=self.chunks[i].chunk_index,
                            category=self.chunks[i].category, title=self.chunks[i].title,
                            header_path=self.chunks[i].header_path or "", chunk_hash=self.chunks[i].chunk_hash,
                            similarity=float(best[i])) for i in order if best[i] > -2.0]
        return hits, {"embed_ms": 0.0, "vector_search_ms": 0.0}


async def rank_set(queries: Path, embedder: Any) -> dict[str, dict[str, list[str]]]:
    """{variant: {case id: page ranking}} for every ranked case of the set at phase 3."""
    from lab.evaluation.kinds import corpus_dir, page_ranking, ranked_cases, read_corpus
    from service.evaluation.labelled import load_labelled_set
    from service.flags import load_flags
    from service.ingest.parse import plain_text, sentences
    from service.ingest.representations import passage_context
    from service.pipeline import TierContext
    from service.settings import load_settings
    from service.wiring import make_pipeline

    settings = load_settings()
    flags = load_flags(settings.flags_file)
    corpus, cases = load_labelled_set(queries)
    folder = corpus_dir(corpus, settings, None)
    documents, chunks = read_corpus(folder, flags)
    chunks = sorted(chunks, key=lambda c: (c.doc_slug, c.chunk_index))
    bodies = embedder.embed_passages([(passage_context(c.header_path, c.title), c.content) for c in chunks])
    texts: list[tuple[str, str]] = []
    owner: list[int] = []
    for i, c in enumerate(chunks):
        for sentence in sentences(" ".join(plain_text(c.content).split())):
            texts.append((passage_context(c.header_path, c.title), sentence))
            owner.append(i)
    sentence_vectors = embedder.embed_passages(texts)
    say(f"{corpus}: {len(chunks)} chunks, {len(texts)} sentences")
    body_owner = np.arange(len(chunks))
    legs = {
        "body": InMemoryLeg(embedder, chunks, bodies, body_owner),
        "max(body, sentence)": InMemoryLeg(embedder, chunks, np.vstack([bodies, sentence_vectors]),
                                           np.concatenate([body_owner, np.array(owner, dtype=int)])),
    }
    out: dict[str, dict[str, list[str]]] = {}
    for name, leg in legs.items():
        pipeline = make_pipeline(folder, lambda: flags, semantic=lambda leg=leg: leg)  # type: ignore[misc]
        pipeline.load_corpus(documents, chunks, 1)
        rankings: dict[str, list[str]] = {}
        for case in ranked_cases(cases):
            query, notes = pipeline.normalise(case.query, flags)
            ctx = TierContext(query=query, notes=notes, category=None, flags=flags, top_k=10)
            candidates = await pipeline.hybrid_tier.run(ctx)
            rankings[case.id] = page_ranking(e.doc_slug for e in candidates.ranking)
        out[name] = rankings
    return out


def table(sets: dict[str, tuple[list[Any], dict[str, dict[str, list[str]]]]], split: str) -> list[str]:
    from lab.evaluation.kinds import first_relevant_rank

    lines = [f"| {split} split, top-1 / top-3 | " + " | ".join(f"{k} (n)" for k in (*KINDS, "all")) + " |",
             "|---|" + "--:|" * (len(KINDS) + 1)]
    for variant in VARIANTS:
        cells = []
        for kind in (*KINDS, "all"):
            ranks = [first_relevant_rank(rankings[variant][c.id], c.pages)
                     for cases, rankings in sets.values() for c in cases
                     if c.split == split and c.id in rankings[variant] and (kind == "all" or c.kind == kind)]
            n = len(ranks)
            top1 = sum(r == 1 for r in ranks)
            top3 = sum(r is not None and r <= 3 for r in ranks)
            cells.append(f"{100 * top1 / n:.1f} / {100 * top3 / n:.1f} ({n})" if n else "-")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    import asyncio

    from service.evaluation.harness import load_cached_embedder
    from service.evaluation.labelled import load_labelled_set
    from service.flags import load_flags
    from service.settings import load_settings

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=Path, action="append", required=True)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    settings = load_settings()
    embedder = load_cached_embedder(settings, load_flags(settings.flags_file).embedding.backend)
    sets = {}
    for queries in args.queries:
        corpus, cases = load_labelled_set(queries)
        sets[corpus] = (cases, asyncio.run(rank_set(queries, embedder)))
    lines = [f"Phase 3 as the service ranks it, semantic leg in memory and exact, {len(sets)} labelled sets.", ""]
    for split in ("dev", "test"):
        lines += [*table(sets, split), ""]
    per = ["| corpus, test top-1 | " + " | ".join(VARIANTS) + " |", "|---|" + "--:|" * len(VARIANTS)]
    from lab.evaluation.kinds import first_relevant_rank
    for corpus, (cases, rankings) in sets.items():
        row = []
        for variant in VARIANTS:
            ranks = [first_relevant_rank(rankings[variant][c.id], c.pages) for c in cases
                     if c.split == "test" and c.id in rankings[variant]]
            row.append(f"{100 * sum(r == 1 for r in ranks) / len(ranks):.1f}" if ranks else "-")
        per.append(f"| {corpus} | " + " | ".join(row) + " |")
    text = "\n".join([*lines, *per])
    print(text)
    if args.out is not None:
        command = "python -m lab.experiments.sentence_vectors " + " ".join(f"--queries {q}" for q in args.queries)
        args.out.write_text(f"{command}\n\n{text}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":  # the rst reader's worker process is spawned: import-safe
    sys.exit(main())
