"""Hybrid fusion math and query-type weighting (issue 5). Pure functions, no I/O.

Sources:
- Min-max normalised weighted sum ("convex combination"): Bruch, Gai, Ingber,
  "An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023, which
  finds it at least as good as RRF once the weight is tuned; the seed plan's
  default weight is 0.3 keyword + 0.7 embedding.
- Reciprocal rank fusion: Cormack, Clarke, Büttcher, "Reciprocal Rank Fusion
  outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009.
  k = 60 is the paper's constant (flag `fusion.rrf_k`): it damps the advantage of the very first
  ranks so one leg's top hit cannot outvote agreement lower down (Haystack's
  `_reciprocal_rank_fusion` uses the same k).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from service.domain.types import Base, QueryType
from service.flags import Flags

K = TypeVar("K", bound=Hashable)


class FusedScore(Base, frozen=True):
    """Both legs of one candidate, as `match_explain` reports them."""

    keyword_raw: float | None
    semantic_raw: float | None
    keyword_norm: float
    semantic_norm: float
    fused: float


class FusionMethod(enum.Enum):
    weighted = "weighted"
    rrf = "rrf"


def fusion_method(name: str) -> FusionMethod:
    """Look a method up by name; an unknown name fails listing the valid ones."""
    try:
        return FusionMethod(name.strip().lower())
    except ValueError:
        valid = ", ".join(m.value for m in FusionMethod)
        raise ValueError(f"unknown fusion method {name!r}; valid: {valid}") from None


def min_max_normalise(scores: Mapping[K, float]) -> dict[K, float]:
    """(s - min) / (max - min) into [0, 1].

    When all scores are equal (including a single candidate) there is no spread
    to normalise: each is the best its leg has, so it gets 1.0 — unless the
    scores are all <= 0, which means the leg found nothing, so 0.0.
    """
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        fill = 1.0 if high > 0 else 0.0
        return dict.fromkeys(scores, fill)
    span = high - low
    return {key: (value - low) / span for key, value in scores.items()}


def weighted_sum_fusion(
    keyword: Mapping[K, float],
    semantic: Mapping[K, float],
    w_keyword: float,
    w_semantic: float,
) -> dict[K, FusedScore]:
    """w_kw * minmax(keyword) + w_sem * minmax(semantic) over the union of candidates.

    A candidate missing from one leg scores 0 in that leg after normalisation
    (it was not retrieved, which is the weakest evidence the leg can give).
    Ordered by fused score, best first; ties keep keyword-then-semantic order.
    """
    if w_keyword < 0 or w_semantic < 0:
        raise ValueError("fusion weights must be >= 0")
    kw_norm = min_max_normalise(keyword)
    sem_norm = min_max_normalise(semantic)
    keys = list(dict.fromkeys([*keyword, *semantic]))
    fused = {
        key: FusedScore(
            keyword_raw=keyword.get(key),
            semantic_raw=semantic.get(key),
            keyword_norm=kw_norm.get(key, 0.0),
            semantic_norm=sem_norm.get(key, 0.0),
            fused=w_keyword * kw_norm.get(key, 0.0) + w_semantic * sem_norm.get(key, 0.0),
        )
        for key in keys
    }
    order = sorted(range(len(keys)), key=lambda i: (-fused[keys[i]].fused, i))
    return {keys[i]: fused[keys[i]] for i in order}


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], k: int) -> dict[K, float]:
    """RRF(d) = sum over rankings of 1 / (k + rank(d)), rank starting at 1.

    Ordered best first; ties keep first-appearance order (deterministic).
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(dict.fromkeys(ranking), start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    keys = list(scores)
    order = sorted(range(len(keys)), key=lambda i: (-scores[keys[i]], i))
    return {keys[i]: scores[keys[i]] for i in order}


def fusion_weights(flags: Flags, query_type: QueryType) -> tuple[float, float]:
    """(keyword, semantic) weights: by query type, or `weights.default` when that is off."""
    weights = flags.fusion.weights
    return getattr(weights, query_type) if flags.fusion.query_type_weights else weights.default
