"""The seed plan's points formula (`lexical.scorer: seed`) applied to a unit: the one place its points are counted.

The `seed` scorer ranks by `SeedMatch.score`; and every Evidence, whatever
ranked it, carries the seed guards computed here (raw points, matched terms,
title/keyword hit, exact title phrase), because the decision layer's
MIN_SCORE / MIN_GAP thresholds are in seed points.  The arithmetic itself is
in keyword_formulas.py.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from service.scoring import keyword_formulas as formula
from service.scoring.lexical_units import ScoringUnit, is_exact_title_phrase
from service.scoring.postings import PostingArrays


@dataclass(frozen=True, slots=True)
class SeedMatch:
    exact_title_phrase: bool
    title_hits: int
    keyword_hits: int
    content_hits: int
    raw: float
    """Seed points before length normalisation."""
    divisor: float
    content_token_count: int
    holdings: tuple[tuple[bool, bool, bool], ...]
    """Per query key: whether the title, the keywords and the content hold it."""

    @property
    def score(self) -> float:
        return self.raw / self.divisor

    @property
    def title_or_keyword_hit(self) -> bool:
        return self.title_hits + self.keyword_hits > 0


def seed_match(unit: ScoringUnit, keys: Sequence[str]) -> SeedMatch:
    """Count the unit's seed points for the query's match keys (numbers only:
    this runs for every candidate when the seed formula ranks)."""
    exact = is_exact_title_phrase(keys, unit.title_phrases)
    title_keys, keyword_keys, content_keys = unit.title_keys, unit.keyword_keys, unit.content_keys
    held: list[tuple[bool, bool, bool]] = []
    title = keyword = content = 0
    for key in keys:
        at = bisect_left(content_keys, key)  # content keys are sorted: a binary search
        in_title, in_keywords = key in title_keys, key in keyword_keys
        in_content = at < len(content_keys) and content_keys[at] == key
        held.append((in_title, in_keywords, in_content))
        title += in_title
        keyword += in_keywords
        content += in_content
    holdings = tuple(held)
    raw = formula.raw_points(exact_title_phrase=exact, title_hits=title, keyword_hits=keyword, content_hits=content)
    divisor = formula.length_divisor(unit.content_token_count, exact)
    return SeedMatch(exact, title, keyword, content, raw, divisor, unit.content_token_count, holdings)


def matched_tokens(match: SeedMatch, tokens: Sequence[str]) -> tuple[str, ...]:
    """The matched query tokens (distinct, in query order): `explain_seed`'s first half, no text."""
    held = (token for token, where in zip(tokens, match.holdings, strict=True) if any(where))
    return tuple(dict.fromkeys(held))


def explain_seed(match: SeedMatch, tokens: Sequence[str]) -> tuple[tuple[str, ...], list[str]]:
    """The matched query tokens (distinct, in query order) and a line per point
    of `match`, then its normalisation (built only for the units returned)."""
    lines: list[str] = []
    matched: dict[str, None] = {}
    if match.exact_title_phrase:
        lines.append(f"exact phrase in title '{' '.join(tokens)}' +{formula.TITLE_PHRASE_POINTS:g}")
    for token, (in_title, in_keywords, in_content) in zip(tokens, match.holdings, strict=True):
        if in_title:
            lines.append(f"title token '{token}' +{formula.TITLE_TOKEN_POINTS:g}")
        if in_keywords:
            lines.append(f"keyword '{token}' +{formula.KEYWORD_POINTS:g}")
        if in_content:
            lines.append(f"content '{token}' +{formula.CONTENT_POINTS:g}")
        if in_title or in_keywords or in_content:
            matched[token] = None
    half = " (penalty halved: exact title phrase)" if match.exact_title_phrase else ""
    lines.append(
        f"raw {match.raw:g} / {match.divisor:.2f} (√{match.content_token_count} content tokens){half}"
        f" = {match.score:.3f}"
    )
    return tuple(matched), lines


def rank_seed(
    postings: PostingArrays, units: Sequence[ScoringUnit], keys: Sequence[str], category: str | None, limit: int
) -> list[int]:
    """Top `limit` units sharing a match key, by seed score (ties: slug, chunk index)."""
    candidates: set[int] = set()
    for key in keys:
        held = postings.match_keys.get(key)
        if held is not None:
            candidates.update(held.tolist())
    if category is not None:
        candidates = {c for c in candidates if units[c].category == category}
    scores = {c: round(seed_match(units[c], keys).score, 6) for c in candidates}
    return sorted(scores, key=lambda c: (-scores[c], units[c].doc_slug, units[c].chunk_index or 0))[:limit]
