"""The seed formula applied to a unit: the one place its points are counted.

The `seed` scorer ranks by `SeedMatch.score`; and every Evidence, whatever
ranked it, carries the seed guards computed here (raw points, matched terms,
title/keyword hit, exact title phrase), because the decision layer's
MIN_SCORE / MIN_GAP thresholds are in seed points.  The arithmetic itself is
in keyword_formulas.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from service.scoring import keyword_formulas as formula
from service.scoring.lexical_units import ScoringUnit, is_exact_title_phrase
from service.scoring.postings import PostingArrays


@dataclass(frozen=True, slots=True)
class TokenHit:
    token: str
    in_title: bool
    in_keywords: bool
    in_content: bool


@dataclass(frozen=True, slots=True)
class SeedMatch:
    exact_title_phrase: bool
    hits: tuple[TokenHit, ...]
    """One per query token, in query order."""
    raw: float
    """Seed points before length normalisation."""
    divisor: float
    content_token_count: int

    @property
    def score(self) -> float:
        return self.raw / self.divisor

    @property
    def matched_terms(self) -> tuple[str, ...]:
        """Distinct query tokens found in any field, in query order."""
        return tuple(dict.fromkeys(h.token for h in self.hits if h.in_title or h.in_keywords or h.in_content))

    @property
    def title_or_keyword_hit(self) -> bool:
        return any(h.in_title or h.in_keywords for h in self.hits)

    def explain(self, tokens: Sequence[str]) -> list[str]:
        """Every point, then the normalisation."""
        lines: list[str] = []
        if self.exact_title_phrase:
            lines.append(f"exact phrase in title '{' '.join(tokens)}' +5")
        for hit in self.hits:
            if hit.in_title:
                lines.append(f"title token '{hit.token}' +3")
            if hit.in_keywords:
                lines.append(f"keyword '{hit.token}' +2")
            if hit.in_content:
                lines.append(f"content '{hit.token}' +1")
        half = " (penalty halved: exact title phrase)" if self.exact_title_phrase else ""
        lines.append(
            f"raw {self.raw:g} / {self.divisor:.2f} (√{self.content_token_count} content tokens){half}"
            f" = {self.score:.3f}"
        )
        return lines


def seed_match(unit: ScoringUnit, tokens: Sequence[str], keys: Sequence[str]) -> SeedMatch:
    """Count the unit's seed points for the query (`keys`: the tokens' match keys)."""
    exact = is_exact_title_phrase(keys, unit.title_phrases)
    hits = tuple(
        TokenHit(token, key in unit.title_keys, key in unit.keyword_keys, unit.has_content_key(key))
        for token, key in zip(tokens, keys, strict=True)
    )
    raw = formula.raw_points(
        exact_title_phrase=exact,
        title_hits=sum(h.in_title for h in hits),
        keyword_hits=sum(h.in_keywords for h in hits),
        content_hits=sum(h.in_content for h in hits),
    )
    divisor = formula.length_divisor(unit.content_token_count, exact)
    return SeedMatch(exact, hits, raw, divisor, unit.content_token_count)


def rank_seed(
    postings: PostingArrays,
    units: Sequence[ScoringUnit],
    tokens: Sequence[str],
    keys: Sequence[str],
    category: str | None,
    limit: int,
) -> list[int]:
    """Top `limit` units sharing a match key, by seed score (ties: slug, chunk index)."""
    candidates: set[int] = set()
    for key in keys:
        held = postings.match_keys.get(key)
        if held is not None:
            candidates.update(held.tolist())
    if category is not None:
        candidates = {c for c in candidates if units[c].category == category}
    scores = {c: round(seed_match(units[c], tokens, keys).score, 6) for c in candidates}
    return sorted(scores, key=lambda c: (-scores[c], units[c].doc_slug, units[c].chunk_index or 0))[:limit]
