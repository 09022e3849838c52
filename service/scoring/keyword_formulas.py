"""The seed plan's keyword scoring formula, as pure math.

Source: the seed plan (shared/seeds/001_…, "Phase 1 — Scoring Formula").

| match                 | points |
|-----------------------|--------|
| exact phrase in title | +5     |
| token in title        | +3     |
| token in keywords[]   | +2     |
| token in content      | +1     |

``final = raw / sqrt(content_token_count)``: longer pages need more evidence
(normalised by content length only, title and keywords excluded).  When the
title matches the exact query phrase the penalty is halved, i.e. the divisor
is ``0.5 × sqrt(n)``: a page whose title *is* the question should not lose to
a short page that mentions the word once.
"""

from __future__ import annotations

import math

TITLE_PHRASE_POINTS = 5.0
TITLE_TOKEN_POINTS = 3.0
KEYWORD_POINTS = 2.0
CONTENT_POINTS = 1.0
EXACT_TITLE_PENALTY_FACTOR = 0.5

# An exact title phrase counts as this many matched terms (seed plan).
EXACT_PHRASE_MATCHED_TERMS = 2


def raw_points(*, exact_title_phrase: bool, title_hits: int, keyword_hits: int, content_hits: int) -> float:
    """Seed points before length normalisation."""
    return (
        (TITLE_PHRASE_POINTS if exact_title_phrase else 0.0)
        + TITLE_TOKEN_POINTS * title_hits
        + KEYWORD_POINTS * keyword_hits
        + CONTENT_POINTS * content_hits
    )


def length_divisor(content_token_count: int, exact_title_phrase: bool) -> float:
    """``sqrt(n)``, halved on an exact title phrase; never below 1 token."""
    divisor = math.sqrt(max(content_token_count, 1))
    return divisor * EXACT_TITLE_PENALTY_FACTOR if exact_title_phrase else divisor


def final_score(raw: float, content_token_count: int, exact_title_phrase: bool) -> float:
    """``raw / sqrt(n)`` with the exact-title-phrase discount."""
    return raw / length_divisor(content_token_count, exact_title_phrase)


def confidence(top: float, second: float) -> float:
    """``(top - second) / top``; 0 when nothing scored."""
    if top <= 0:
        return 0.0
    return max(0.0, (top - second) / top)


def matched_term_count(matched_terms: int, exact_title_phrase: bool) -> int:
    """Unique matched tokens; an exact title phrase counts as 2 (seed plan)."""
    return max(matched_terms, EXACT_PHRASE_MATCHED_TERMS) if exact_title_phrase else matched_terms
