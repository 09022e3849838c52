"""Phase 3's retrieval, one component: `HybridRetriever`.

normalised query ─┬─ keyword leg (in-memory chunk index, the flags' lexical scorer)
                  └─ semantic leg (query embedding → pgvector top-K), concurrently
                  → fusion (the flags' method; weights by `query.query_type`)
                  → per-document de-duplication (not for multi-intent queries)
                  → `HybridCandidates`: the fused ranking plus every signal the
                    decision (`decide.hybrid_policy`) needs.

The service (`Pipeline.phase3`) and `python -m service eval` both call it, so
the eval figures are the service's figures.

Fusion runs over the union of both candidate lists, keyed by chunk
(doc_slug, chunk_index).  The fused evidence keeps the keyword leg's matched
terms and guards (the decision layer still needs them) and explains both
legs' scores and the weights in `match_explain`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from service.domain.signals import SemanticSignal
from service.domain.types import Evidence, NormalizedQuery, QueryType
from service.flags import Flags
from service.normalize.lexicon import Synonyms
from service.normalize.text import rewrite_for_embedding
from service.scoring.chunks import dedupe_per_document
from service.scoring.fusion import (
    FusionMethod,
    fusion_method,
    reciprocal_rank_fusion,
    weighted_sum_fusion,
)
from service.scoring.indexes import CorpusIndexes
from service.scoring.keyword import make_snippet, plain_text
from service.scoring.semantic import SemanticHit, SemanticSearch

ChunkKey = tuple[str, int]


def semantic_signal(hits: Sequence[SemanticHit]) -> SemanticSignal:
    """The nearest neighbour's similarity and its margin over the best other page."""
    if not hits:
        return SemanticSignal(top_similarity=0.0, margin=0.0, top_doc=None)
    best = max(hits, key=lambda h: h.similarity)
    other = max((h.similarity for h in hits if h.doc_slug != best.doc_slug), default=0.0)
    return SemanticSignal(top_similarity=best.similarity, margin=best.similarity - other, top_doc=best.doc_slug)


def _key_of(evidence: Evidence) -> ChunkKey:
    return (evidence.doc_slug, evidence.chunk_index or 0)


def _evidence_from_hit(hit: SemanticHit, doc_info: Callable[[str], tuple[str, str]]) -> Evidence:
    content_hash, summary = doc_info(hit.doc_slug)
    return Evidence(
        doc_slug=hit.doc_slug,
        title=hit.title,
        category=hit.category,
        # With no terms the snippet is the summary when there is one: clean the
        # hit's text only otherwise (a regex per hit was 17 % of phase 3's scoring).
        snippet=summary or make_snippet(plain_text(hit.content), []),
        score=0.0,
        content_hash=content_hash,
        matched_terms=(),
        source="embedding",
        header_path=hit.header_path or None,
        chunk_index=hit.chunk_index,
        chunk_hash=hit.chunk_hash,
    )


def fuse_evidence(
    keyword: Sequence[Evidence],
    hits: Sequence[SemanticHit],
    *,
    method: FusionMethod,
    weights: tuple[float, float],
    query_type: QueryType,
    rrf_k: int,
    doc_info: Callable[[str], tuple[str, str]],
) -> list[Evidence]:
    """New `hybrid` evidence for every chunk either leg found, best first."""
    by_key: dict[ChunkKey, Evidence] = {_key_of(e): e for e in keyword}
    similarity: dict[ChunkKey, float] = {}
    for hit in hits:
        key = (hit.doc_slug, hit.chunk_index)
        similarity[key] = hit.similarity
        by_key.setdefault(key, _evidence_from_hit(hit, doc_info))
    keyword_scores = {_key_of(e): e.score for e in keyword}

    fused: dict[ChunkKey, tuple[float, str]] = {}
    if method is FusionMethod.rrf:
        keyword_rank = list(keyword_scores)
        semantic_rank = [k for k, _ in sorted(similarity.items(), key=lambda kv: -kv[1])]
        for key, score in reciprocal_rank_fusion([keyword_rank, semantic_rank], k=rrf_k).items():
            kw_pos = keyword_rank.index(key) + 1 if key in keyword_scores else None
            sem_pos = semantic_rank.index(key) + 1 if key in similarity else None
            fused[key] = (score, f"rrf k={rrf_k}: keyword rank {kw_pos or '-'}, semantic rank {sem_pos or '-'} = {score:.4f}")
    else:
        w_kw, w_sem = weights
        for key, parts in weighted_sum_fusion(keyword_scores, similarity, w_kw, w_sem).items():
            fused[key] = (
                parts.fused,
                f"hybrid ({query_type}): {w_kw:g} × keyword {parts.keyword_norm:.3f}"
                f" (raw {parts.keyword_raw if parts.keyword_raw is not None else '-'})"
                f" + {w_sem:g} × semantic {parts.semantic_norm:.3f}"
                f" (cosine {parts.semantic_raw if parts.semantic_raw is None else round(parts.semantic_raw, 4)})"
                f" = {parts.fused:.4f}",
            )

    results: list[Evidence] = []
    for key, (score, line) in fused.items():
        base = by_key[key]
        results.append(
            Evidence(
                doc_slug=base.doc_slug,
                title=base.title,
                category=base.category,
                snippet=base.snippet,
                score=round(score, 6),
                content_hash=base.content_hash,
                matched_terms=base.matched_terms,
                source="hybrid",
                header_path=base.header_path,
                match_explain=(*base.match_explain, line),
                chunk_index=base.chunk_index,
                chunk_hash=base.chunk_hash,
                raw_score=base.raw_score,
                seed_score=base.seed_score,
                title_or_keyword_hit=base.title_or_keyword_hit,
                exact_title_phrase=base.exact_title_phrase,
            )
        )
    results.sort(key=lambda e: (-e.score, e.doc_slug, e.chunk_index or 0))
    return results


@dataclass(frozen=True)
class HybridLegs:
    """Both legs' candidates for one query, before fusion."""

    keyword: list[Evidence]
    hits: list[SemanticHit]
    timings: dict[str, float] = field(default_factory=dict)

    def with_keyword(self, keyword: list[Evidence]) -> HybridLegs:
        return dataclasses.replace(self, keyword=keyword)


@dataclass(frozen=True)
class HybridCandidates:
    """Phase 3's candidates and the signals its decision needs."""

    keyword: list[Evidence]
    """The keyword leg, best first (the keyword decision is made on it)."""
    hits: list[SemanticHit]
    fused: list[Evidence]
    """The fused ranking, de-duplicated per document unless the query is multi-intent."""
    deduplicated: int
    signal: SemanticSignal
    query_type: QueryType
    method: FusionMethod
    weights: tuple[float, float]
    timings: dict[str, float]

    def stats(self) -> dict[str, float | int]:
        return {
            **self.timings, "keyword_candidates": len(self.keyword), "semantic_candidates": len(self.hits),
            "deduplicated": self.deduplicated, "top_similarity": round(self.signal.top_similarity, 4),
        }


def fusion_weights(flags: Flags, query_type: QueryType) -> tuple[float, float]:
    """(keyword, semantic) weights: by query type, or `weights.default` when that is off."""
    weights = flags.fusion.weights
    return getattr(weights, query_type) if flags.fusion.query_type_weights else weights.default


class HybridRetriever:
    """Keyword leg + semantic leg + fusion over one corpus snapshot."""

    def __init__(self, indexes: CorpusIndexes, semantic: SemanticSearch, synonyms: Synonyms) -> None:
        self.indexes = indexes
        self.semantic = semantic
        self.synonyms = synonyms

    async def legs(
        self,
        query: NormalizedQuery,
        flags: Flags,
        *,
        category: str | None = None,
        pool_size: int | None = None,
        notes: Sequence[str] = (),
        while_embedding: Callable[[list[Evidence]], None] | None = None,
    ) -> HybridLegs:
        """Both legs; `pool_size` candidates each (default `retrieval.candidate_pool`).

        The query embedding runs in its own thread: the keyword leg (and
        `while_embedding`, e.g. the keyword decision) run meanwhile.
        """
        size = pool_size or flags.retrieval.candidate_pool
        text = rewrite_for_embedding(query.raw, self.synonyms.phrases, self.synonyms.words)
        semantic = asyncio.ensure_future(self.semantic.search(text, size, category, flags))
        try:
            keyword = self.indexes.chunks.search(
                query.tokens, category=category, limit=size, notes=notes, lexical=flags.lexical,
            )
            if while_embedding is not None:
                while_embedding(keyword)
        except BaseException:
            semantic.cancel()
            raise
        hits, timings = await semantic
        return HybridLegs(keyword=keyword, hits=hits, timings=dict(timings))

    def fuse(self, query: NormalizedQuery, legs: HybridLegs, flags: Flags) -> HybridCandidates:
        """Fuse the legs with the flags' method and weights, then de-duplicate."""
        started = time.perf_counter()
        method = fusion_method(flags.fusion.method)
        weights = fusion_weights(flags, query.query_type)
        fused = fuse_evidence(
            legs.keyword, legs.hits, method=method, weights=weights, query_type=query.query_type,
            rrf_k=flags.fusion.rrf_k, doc_info=self.indexes.doc_info,
        )
        trimmed = 0
        if not query.is_multi_intent:
            fused, trimmed = dedupe_per_document(fused, flags.retrieval.max_chunks_per_doc)
        signal = semantic_signal(legs.hits)
        timings = {**legs.timings, "fusion_ms": round((time.perf_counter() - started) * 1000, 3)}
        return HybridCandidates(
            keyword=legs.keyword, hits=legs.hits, fused=fused, deduplicated=trimmed, signal=signal,
            query_type=query.query_type, method=method, weights=weights, timings=timings,
        )

    async def retrieve(
        self,
        query: NormalizedQuery,
        flags: Flags,
        *,
        category: str | None = None,
        pool_size: int | None = None,
        notes: Sequence[str] = (),
        while_embedding: Callable[[list[Evidence]], None] | None = None,
    ) -> HybridCandidates:
        legs = await self.legs(
            query, flags, category=category, pool_size=pool_size, notes=notes, while_embedding=while_embedding,
        )
        return self.fuse(query, legs, flags)
