"""Phase 3's retrieval, one component: `HybridRetriever`.

normalised query ─┬─ keyword leg (in-memory chunk index, the flags' lexical scorer)
                  └─ semantic leg (query embedding → pgvector top-K), concurrently
                  → fusion (the flags' method; weights by `query.query_type`)
                  → per-document de-duplication (not for multi-intent queries)
                  → `HybridCandidates`: the fused ranking plus every signal the
                    decision (`decide.seed_rules_phase3`) needs.

The service (`Pipeline.phase3`) and `python -m lab eval` both call it, so
the eval figures are the service's figures.

Fusion runs over the union of both candidate lists, keyed by chunk
(doc_slug, chunk_index), on numbers only: the keyword leg is searched without
text, and the fused evidence keeps its scores, matched terms and guards (all
the decision layer reads).  The snippet and `match_explain` (both legs'
scores and the weights) are built by `HybridCandidates.explained` for the
candidates a response shows, a handful of the ~100 fused.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from service.domain.signals import SemanticSignal
from service.domain.types import Evidence, NormalizedQuery, QueryType
from service.flags import Flags
from service.normalize.lexicon import Synonyms
from service.normalize.text import rewrite_for_embedding
from service.scoring.chunks import dedupe_per_document
from service.scoring.fusion import (
    FusedScore,
    FusionMethod,
    fusion_method,
    fusion_weights,
    reciprocal_rank_fusion,
    weighted_sum_fusion,
)
from service.scoring.indexes import CorpusIndexes
from service.scoring.keyword import make_snippet, plain_text, shown_score
from service.scoring.page_priors import page_factor
from service.scoring.semantic import SemanticHit, SemanticSearch, searched_exactly, semantic_signal

ChunkKey = tuple[str, int]
RrfParts = tuple[int | None, int | None, float]
"""A candidate's keyword rank, semantic rank (None: not in that leg) and RRF score."""


def _key_of(evidence: Evidence) -> ChunkKey:
    return (evidence.doc_slug, evidence.chunk_index or 0)


def _unexplained(base: Evidence, score: float) -> Evidence:
    """The fused candidate before its text: `Fused.explained` adds snippet and `match_explain`."""
    return Evidence(
        doc_slug=base.doc_slug,
        title=base.title,
        category=base.category,
        snippet="",
        score=round(score, 6),
        content_hash=base.content_hash,
        matched_terms=base.matched_terms,
        source="hybrid",
        header_path=base.header_path,
        chunk_index=base.chunk_index,
        chunk_hash=base.chunk_hash,
        raw_score=base.raw_score,
        seed_score=base.seed_score,
        title_or_keyword_hit=base.title_or_keyword_hit,
        exact_title_phrase=base.exact_title_phrase,
        query_is_keyword=base.query_is_keyword,
        query_is_title=base.query_is_title,
    )


def _numbers_from_hit(hit: SemanticHit, doc_info: Callable[[str], tuple[str, str]]) -> Evidence:
    return Evidence(
        doc_slug=hit.doc_slug, title=hit.title, category=hit.category, snippet="", score=0.0,
        content_hash=doc_info(hit.doc_slug)[0], matched_terms=(), source="embedding",
        header_path=hit.header_path or None, chunk_index=hit.chunk_index, chunk_hash=hit.chunk_hash,
    )


@dataclass(frozen=True)
class Fused:
    """The fused ranking (numbers and guards only) and what its text is made from.

    Snippets and explanations are built by `explained` for the few candidates a
    response shows, not for the whole union of both legs (most of phase 3's
    event-loop time went there)."""

    ranking: list[Evidence]
    keyword: dict[ChunkKey, Evidence]
    hits: dict[ChunkKey, SemanticHit]
    parts: dict[ChunkKey, FusedScore | RrfParts]
    """Per candidate: the weighted sum's parts, or its RRF ranks and score."""
    query_type: QueryType
    weights: tuple[float, float]
    rrf_k: int
    doc_info: Callable[[str], tuple[str, str]]
    chunk_text: Callable[[ChunkKey], str]
    """A chunk's text from the in-memory corpus (semantic hits carry none)."""
    explain_keyword: Callable[[Evidence], Evidence] | None
    """Completes a keyword-leg candidate (None: the keyword evidence is complete already)."""
    priors: dict[str, float] = field(default_factory=dict)
    """The factor of each page whose score a page prior changed (release notes lower a page, an
    operator's `retrieval.page_boosts` lower or raise one)."""

    def line(self, key: ChunkKey) -> str:
        parts = self.parts[key]
        if not isinstance(parts, FusedScore):
            kw_pos, sem_pos, score = parts
            return (f"rrf k={self.rrf_k}: keyword rank {kw_pos or '-'}, semantic rank {sem_pos or '-'}"
                    f" = {score:.4f}{self._prior_part(key, score)}")
        w_kw, w_sem = self.weights
        return (
            f"hybrid ({self.query_type}): {w_kw:g} × keyword {parts.keyword_norm:.3f}"
            f" (raw {parts.keyword_raw if parts.keyword_raw is not None else '-'})"
            f" + {w_sem:g} × semantic {parts.semantic_norm:.3f}"
            f" (cosine {parts.semantic_raw if parts.semantic_raw is None else round(parts.semantic_raw, 4)})"
            f" = {parts.fused:.4f}{self._prior_part(key, parts.fused)}"
        )

    def _prior_part(self, key: ChunkKey, score: float) -> str:
        """The page prior's factor and the score it leaves ("" for a page it did not change)."""
        prior = self.priors.get(key[0])
        return "" if prior is None else f" × page prior {prior:.2f} = {score * prior:.4f}"

    def explained(self, evidence: Evidence) -> Evidence:
        """`evidence` with its snippet and explanation when it is one of this ranking's
        candidates (possibly re-ordered or explained further by the decision); any other
        evidence unchanged."""
        key = _key_of(evidence)
        keyword = self.keyword.get(key)
        if evidence.source == "keyword" and evidence == keyword and self.explain_keyword is not None:
            return self.explain_keyword(evidence)
        if evidence.source != "hybrid" or key not in self.parts or evidence.snippet:
            return evidence  # not ours, or explained already
        if keyword is not None:
            base = keyword if self.explain_keyword is None else self.explain_keyword(keyword)
            snippet, lines = base.snippet, base.match_explain
        else:
            hit = self.hits[key]
            # The section the embedding matched speaks for itself: its opening, not the
            # page summary (that only when the section has no text at all).
            snippet = make_snippet(plain_text(self.chunk_text(key)), (), self.doc_info(hit.doc_slug)[1])
            lines = ()
        own = self._score(key)
        return msgspec.structs.replace(
            evidence, snippet=snippet,
            match_explain=(*lines, self.line(key), *shown_score(evidence.score, own), *evidence.match_explain),
        )

    def _score(self, key: ChunkKey) -> float:
        """The candidate's own fused score (after its page prior), as `line` computes it."""
        parts = self.parts[key]
        score = parts.fused if isinstance(parts, FusedScore) else parts[2]
        return score * self.priors.get(key[0], 1.0)


def fuse_evidence(
    keyword: Sequence[Evidence],
    hits: Sequence[SemanticHit],
    *,
    method: FusionMethod,
    weights: tuple[float, float],
    query_type: QueryType,
    rrf_k: int,
    doc_info: Callable[[str], tuple[str, str]],
    chunk_text: Callable[[ChunkKey], str],
    explain_keyword: Callable[[Evidence], Evidence] | None = None,
    page_prior: Callable[[str], float] | None = None,
) -> Fused:
    """`hybrid` candidates for every chunk either leg found, best first, without text.

    `page_prior` (a page's slug -> its factor, `page_priors.page_factor`) scales each
    candidate's fused score.
    """
    by_key: dict[ChunkKey, Evidence] = {_key_of(e): e for e in keyword}
    by_hit: dict[ChunkKey, SemanticHit] = {}
    similarity: dict[ChunkKey, float] = {}
    for hit in hits:
        key = (hit.doc_slug, hit.chunk_index)
        similarity[key] = hit.similarity
        by_hit[key] = hit
    keyword_scores = {_key_of(e): e.score for e in keyword}

    scores: dict[ChunkKey, float] = {}
    parts: dict[ChunkKey, FusedScore | RrfParts] = {}
    if method is FusionMethod.rrf:
        keyword_rank = {key: rank for rank, key in enumerate(keyword_scores, start=1)}
        semantic_order = [k for k, _ in sorted(similarity.items(), key=lambda kv: -kv[1])]
        semantic_rank = {key: rank for rank, key in enumerate(semantic_order, start=1)}
        for key, score in reciprocal_rank_fusion([list(keyword_scores), semantic_order], k=rrf_k).items():
            scores[key] = score
            parts[key] = (keyword_rank.get(key), semantic_rank.get(key), score)
    else:
        for key, fused_score in weighted_sum_fusion(keyword_scores, similarity, *weights).items():
            scores[key] = fused_score.fused
            parts[key] = fused_score

    priors: dict[str, float] = {}
    if page_prior is not None:
        for key in scores:
            prior = priors.setdefault(key[0], page_prior(key[0]))
            scores[key] *= prior
    results: list[Evidence] = []
    for key, score in scores.items():
        base = by_key.get(key)
        results.append(_unexplained(base if base is not None else _numbers_from_hit(by_hit[key], doc_info), score))
    results.sort(key=lambda e: (-e.score, e.doc_slug, e.chunk_index or 0))
    return Fused(
        ranking=results, keyword=by_key, hits=by_hit, parts=parts, query_type=query_type, weights=weights,
        rrf_k=rrf_k, doc_info=doc_info, chunk_text=chunk_text, explain_keyword=explain_keyword,
        priors={slug: prior for slug, prior in priors.items() if prior != 1.0},
    )


@dataclass(frozen=True)
class HybridLegs:
    """Both legs' candidates for one query, before fusion."""

    keyword: list[Evidence]
    hits: list[SemanticHit]
    timings: dict[str, float] = field(default_factory=dict)
    explain_keyword: Callable[[Evidence], Evidence] | None = None
    """Completes a keyword candidate when `keyword` was searched without text (None: complete)."""

    def with_keyword(self, keyword: list[Evidence]) -> HybridLegs:
        return dataclasses.replace(self, keyword=keyword, explain_keyword=None)


@dataclass(frozen=True)
class HybridCandidates:
    """Phase 3's candidates and the signals its decision needs."""

    keyword: list[Evidence]
    """The keyword leg, best first (the keyword decision is made on it); numbers and guards only."""
    hits: list[SemanticHit]
    fused: list[Evidence]
    """The fused ranking, de-duplicated per document unless the query is multi-intent.
    Numbers and guards only: `explained` adds the snippet and explanation of the ones shown."""
    deduplicated: int
    signal: SemanticSignal
    query_type: QueryType
    method: FusionMethod
    weights: tuple[float, float]
    timings: dict[str, float]
    explained: Callable[[Evidence], Evidence]
    """A candidate (as the decision left it) with its snippet and `match_explain`."""

    def stats(self) -> dict[str, float | int]:
        return {
            **self.timings, "keyword_candidates": len(self.keyword), "semantic_candidates": len(self.hits),
            "deduplicated": self.deduplicated, "top_similarity": round(self.signal.top_similarity, 4),
        }


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
        text = rewrite_for_embedding(
            query.semantic_text or query.raw, self.synonyms.phrases, self.synonyms.words,
            {fix.original: fix.corrected for fix in query.corrections if fix.original not in self.indexes.lexicon.english},
        )
        # A small corpus is searched exactly: the same neighbours on every replica (semantic_search).
        exact = searched_exactly(len(self.indexes.chunks_by_id), flags)
        semantic = asyncio.ensure_future(self.semantic.search(text, size, category, flags, exact))
        try:
            found = self.indexes.chunks.search_unexplained(
                query.tokens, category=category, limit=size, notes=notes, lexical=flags.lexical,
                identifiers=query.identifiers, phrases=query.name_phrases,
            )
            keyword = found.results
            if while_embedding is not None:
                while_embedding(keyword)
        except BaseException:
            semantic.cancel()
            raise
        hits, timings = await semantic
        return HybridLegs(keyword=keyword, hits=hits, timings=dict(timings), explain_keyword=found.explained)

    def page_prior(self, flags: Flags, query: NormalizedQuery) -> Callable[[str], float] | None:
        """A page's factor on its fused score: every phase's page priors (`page_priors.page_factor`);
        None when none applies."""
        return page_factor(self.indexes, flags, query)

    def fuse(self, query: NormalizedQuery, legs: HybridLegs, flags: Flags) -> HybridCandidates:
        """Fuse the legs with the flags' method and weights, then de-duplicate."""
        started = time.perf_counter()
        method = fusion_method(flags.fusion.method)
        weights = fusion_weights(flags, query.query_type)
        fused = fuse_evidence(
            legs.keyword, legs.hits, method=method, weights=weights, query_type=query.query_type,
            rrf_k=flags.fusion.rrf_k, doc_info=self.indexes.doc_info, chunk_text=self.indexes.chunk_text,
            explain_keyword=legs.explain_keyword, page_prior=self.page_prior(flags, query),
        )
        ranking, trimmed = fused.ranking, 0
        if not query.is_multi_intent:
            ranking, trimmed = dedupe_per_document(ranking, flags.retrieval.max_chunks_per_doc)
        signal = semantic_signal(legs.hits)
        timings = {**legs.timings, "fusion_ms": round((time.perf_counter() - started) * 1000, 3)}
        return HybridCandidates(
            keyword=legs.keyword, hits=legs.hits, fused=ranking, deduplicated=trimmed, signal=signal,
            query_type=query.query_type, method=method, weights=weights, timings=timings, explained=fused.explained,
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
