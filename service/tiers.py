"""The tiers: each retrieves for one query and returns `Candidates`; none decides.

    KeywordTier(1)  BM25F over whole pages
    KeywordTier(2)  BM25F over chunks, at most `retrieval.max_chunks_per_doc` per page
    HybridTier      phase 3: the chunk keyword leg + the semantic leg, fused (scoring/hybrid.py)
    CacheTier       the Tier-1 cache: a core concept's glossary entry for "what is X"

A multi-intent query's parts are searched here too (on the keyword index; phase 3 on the
chunks, as phase 2 does), so that the `Decider` (service/decide/decider.py) has every ranking
it reads.  The fallback chain and the time budgets are the pipeline's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from service.decide.seed_rules import MULTI_INTENT_DEPTH, distinct_documents, ranked_by_score
from service.domain.candidates import Candidates
from service.domain.types import Evidence, NormalizedQuery
from service.flags import Flags
from service.normalize.lexicon import Synonyms
from service.scoring.chunks import dedupe_per_document
from service.scoring.hybrid import HybridRetriever
from service.scoring.indexes import CorpusIndexes
from service.scoring.keyword import KeywordHits, KeywordIndex
from service.scoring.page_priors import lowered, page_factor
from service.scoring.semantic import SemanticSearch
from service.scoring.tier1_cache import Tier1Cache


class CorpusNotLoaded(RuntimeError):
    """No corpus in memory yet (the database has not been reachable)."""


class NoCacheEntry(LookupError):
    """The Tier-1 cache has nothing for this query."""


@dataclass(frozen=True)
class TierContext:
    """What every tier gets: the normalised query and the request's knobs."""

    query: NormalizedQuery
    notes: list[str]
    """Lines the scorers add to the response's provenance (e.g. a typo correction)."""
    category: str | None
    flags: Flags
    top_k: int


Indexes = Callable[[], CorpusIndexes]
"""The corpus in memory now (raises `CorpusNotLoaded` when there is none)."""


def part_rankings(index: KeywordIndex, ctx: TierContext) -> tuple[list[Evidence], ...]:
    """Each part of a multi-intent query searched alone (the head of each ranking is all the
    decision reads); none for a single need."""
    if not ctx.query.is_multi_intent:
        return ()
    flags = ctx.flags
    return tuple(
        index.search(part, category=ctx.category, limit=2 * MULTI_INTENT_DEPTH, notes=ctx.notes, lexical=flags.lexical)
        for part in ctx.query.parts
    )


WHOLE_PAGES = 10
"""How many of phase 1's pages the decision reads at phases 2 and 3 (`page_ranking`), as many as a
run records."""


def keyword_search(
    indexes: CorpusIndexes, index: KeywordIndex, ctx: TierContext, notes: list[str],
) -> tuple[KeywordHits, list[Evidence]]:
    """Phases 1 and 2's search of `index`: the hits, and their evidence with the page priors."""
    flags = ctx.flags
    hits = index.search_unexplained(
        ctx.query.tokens, category=ctx.category, limit=flags.retrieval.candidate_pool, notes=notes,
        lexical=flags.lexical, identifiers=ctx.query.identifiers, phrases=ctx.query.name_phrases,
    )
    return hits, lowered(hits.results, page_factor(indexes, flags, ctx.query))


def page_ranking(indexes: CorpusIndexes, ctx: TierContext) -> tuple[str, ...]:
    """The first `WHOLE_PAGES` pages phase 1 ranks for the query, best first (its notes are
    phase 1's own, not the response's)."""
    _, results = keyword_search(indexes, indexes.documents, ctx, notes=[])
    return tuple(e.doc_slug for e in distinct_documents(ranked_by_score(results), WHOLE_PAGES))


def page_passage(
    indexes: CorpusIndexes, phase: int, slug: str, tokens: tuple[str, ...], flags: Flags,
) -> Evidence | None:
    """A page's best unit (phase 1: the page, else its best chunk) for `tokens`, which should
    hold the page title's words: they reach every unit of the page, the question's pick one."""
    index = indexes.documents if phase == 1 else indexes.chunks
    hits = index.search(tuple(dict.fromkeys(tokens)), limit=len(index.units), lexical=flags.lexical)
    return next((e for e in hits if e.doc_slug == slug), None)


def with_sections(
    explained: Callable[[Evidence], Evidence], indexes: CorpusIndexes, ctx: TierContext,
) -> Callable[[Evidence], Evidence]:
    """Phase 1 ranks whole pages; a page shown names its best-matching section for the query
    (header path, anchor, and a snippet from that section), as the chunk phases do, so the link
    opens the part that answers. The chunks are searched once, for the first page shown."""
    best: dict[str, Evidence] = {}
    chunk_hits: list[KeywordHits] = []

    def sectioned(evidence: Evidence) -> Evidence:
        page = explained(evidence)
        if page.chunk_index is not None or page.header_path is not None:
            return page  # a chunk already, or sectioned before
        if not chunk_hits:
            hits = indexes.chunks.search_unexplained(
                ctx.query.tokens, limit=len(indexes.chunks.units), lexical=ctx.flags.lexical,
                identifiers=ctx.query.identifiers, phrases=ctx.query.name_phrases,
            )
            chunk_hits.append(hits)
            for hit in hits.results:  # best first: each page's first hit is its best section
                best.setdefault(hit.doc_slug, hit)
        chunk = best.get(page.doc_slug)
        if chunk is None or chunk.chunk_index is None:
            return page
        section = chunk_hits[0].explained(chunk)
        stored = indexes.chunks_by_id.get((chunk.doc_slug, chunk.chunk_index))
        return msgspec.structs.replace(
            page, header_path=chunk.header_path, anchor=stored.anchor if stored else "", snippet=section.snippet,
            match_explain=(*page.match_explain, f"section shown: {chunk.header_path} (the page's best-matching section)"),
        )

    return sectioned


class KeywordTier:
    """Phases 1 (pages) and 2 (chunks)."""

    def __init__(self, phase: int, indexes: Indexes) -> None:
        self.phase = phase
        self.indexes = indexes

    async def run(self, ctx: TierContext) -> Candidates:
        indexes = self.indexes()
        index = indexes.documents if self.phase == 1 else indexes.chunks
        if not index.units:
            raise CorpusNotLoaded(f"no {'pages' if self.phase == 1 else 'chunks'} in memory")
        flags = ctx.flags
        hits, results = keyword_search(indexes, index, ctx, ctx.notes)
        trimmed = 0
        if self.phase == 2 and not ctx.query.is_multi_intent:
            results, trimmed = dedupe_per_document(results, flags.retrieval.max_chunks_per_doc)
        stats: dict[str, float | int] = {
            "matched_units": len(results),
            "total_units": len(index.units),
            "deduplicated": trimmed,
            "top_score": results[0].score if results else 0.0,
        }
        return Candidates(
            phase=self.phase, ranking=results, parts=part_rankings(index, ctx),
            whole_pages=page_ranking(indexes, ctx) if self.phase == 2 else (),
            is_stub=indexes.is_stub, pinned=indexes.pinned_pages(ctx.query.identifiers), stats=stats,
            explained=with_sections(hits.explained, indexes, ctx) if self.phase == 1 else hits.explained,
        )


class HybridTier:
    """Phase 3: keyword and semantic legs fused (`scoring.hybrid.HybridRetriever`)."""

    def __init__(self, indexes: Indexes, semantic: Callable[[], SemanticSearch | None], synonyms: Synonyms) -> None:
        self.indexes = indexes
        self.semantic = semantic
        self.synonyms = synonyms

    def retriever(self) -> HybridRetriever:
        """Phase 3's retrieval over the current corpus (the lab's `eval` uses this too)."""
        semantic = self.semantic()
        if semantic is None:
            raise LookupError("no embedding model loaded")
        return HybridRetriever(self.indexes(), semantic, self.synonyms)

    async def run(self, ctx: TierContext) -> Candidates:
        retriever = self.retriever()
        flags = ctx.flags
        is_stub = retriever.indexes.is_stub
        parts: list[tuple[list[Evidence], ...]] = []
        whole_pages: list[tuple[str, ...]] = []

        def meanwhile(_keyword: list[Evidence]) -> None:
            # The parts' and the whole pages' searches run while the query is being embedded.
            parts.append(part_rankings(retriever.indexes.chunks, ctx))
            whole_pages.append(page_ranking(retriever.indexes, ctx))

        candidates = await retriever.retrieve(
            ctx.query, flags, category=ctx.category, notes=ctx.notes, while_embedding=meanwhile,
        )
        # The keyword leg as phase 2 ranks it, with the page-type and operator priors (fusion
        # applies them to the fused scores only), so a decision read off this leg does not bring a
        # release-notes page back.
        keyword = lowered(candidates.keyword, page_factor(retriever.indexes, flags, ctx.query))
        if not ctx.query.is_multi_intent:
            keyword = dedupe_per_document(keyword, flags.retrieval.max_chunks_per_doc)[0]
        page_similarity: dict[str, float] = {}
        for hit in candidates.hits:
            page_similarity[hit.doc_slug] = max(page_similarity.get(hit.doc_slug, 0.0), hit.similarity)
        return Candidates(
            phase=3, ranking=candidates.fused, parts=parts[0] if parts else (), keyword=keyword,
            semantic=candidates.signal, page_similarity=page_similarity,
            whole_pages=whole_pages[0] if whole_pages else (),
            is_stub=is_stub, pinned=retriever.indexes.pinned_pages(ctx.query.identifiers),
            stats=candidates.stats(), explained=candidates.explained,
        )


class CacheTier:
    """The Tier-1 cache (phase 0): answers "what is X" for a core concept from its glossary entry."""

    def __init__(self, cache: Tier1Cache) -> None:
        self.cache = cache

    async def run(self, ctx: TierContext) -> Candidates:
        evidence = self.cache.answer(ctx.query)
        if evidence is None:
            raise NoCacheEntry("not an explain-type question about a core concept")
        return Candidates(phase=0, ranking=(evidence,))
