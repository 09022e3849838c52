"""Phase 3: fuse keyword (chunk) evidence with semantic neighbours into new evidence.

Fusion runs over the union of both candidate lists, keyed by chunk
(doc_slug, chunk_index).  The fused evidence keeps the keyword leg's matched
terms and guards (the decision layer still needs them) and explains both
legs' scores and the weights in `match_explain`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from service.domain.types import Evidence, QueryType
from service.scoring.fusion import FusionMethod, reciprocal_rank_fusion, weighted_sum_fusion
from service.scoring.keyword import make_snippet, plain_text
from service.scoring.semantic import SemanticHit

ChunkKey = tuple[str, int]


@dataclass(frozen=True)
class SemanticSignal:
    """How close the nearest neighbour is, and by how much it beats other pages."""

    top_similarity: float
    margin: float
    top_doc: str | None

    @classmethod
    def of(cls, hits: Sequence[SemanticHit]) -> SemanticSignal:
        if not hits:
            return cls(top_similarity=0.0, margin=0.0, top_doc=None)
        best = max(hits, key=lambda h: h.similarity)
        other = max((h.similarity for h in hits if h.doc_slug != best.doc_slug), default=0.0)
        return cls(top_similarity=best.similarity, margin=best.similarity - other, top_doc=best.doc_slug)


def _key_of(evidence: Evidence) -> ChunkKey:
    return (evidence.doc_slug, evidence.chunk_index or 0)


def _evidence_from_hit(hit: SemanticHit, doc_info: Callable[[str], tuple[str, str]]) -> Evidence:
    content_hash, summary = doc_info(hit.doc_slug)
    return Evidence(
        doc_slug=hit.doc_slug,
        title=hit.title,
        category=hit.category,
        snippet=make_snippet(plain_text(hit.content), [], summary),
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
