"""The keyword leg's formulas as pure math: the seed plan's points, then BM25F.

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
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

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


def confidence(top: float, second: float) -> float:
    """``(top - second) / top``; 0 when nothing scored."""
    if top <= 0:
        return 0.0
    return max(0.0, (top - second) / top)


def matched_term_count(matched_terms: int, exact_title_phrase: bool) -> int:
    """Unique matched tokens; an exact title phrase counts as 2 (seed plan)."""
    return max(matched_terms, EXACT_PHRASE_MATCHED_TERMS) if exact_title_phrase else matched_terms


# --- BM25 (ranking only) -----------------------------------------------------
#
# Source: S. Robertson, H. Zaragoza, "The Probabilistic Relevance Framework:
# BM25 and Beyond", Foundations and Trends in IR 3(4), 2009, eq. 3.15 (the
# "Okapi BM25" saturation) with the non-negative idf of Lucene / bm25s
# (`bm25s/scoring.py`, method "lucene"): ln(1 + (N - df + 0.5) / (df + 0.5)).
# Fields are combined the BM25F way (Zaragoza, Craswell, Taylor, Saria,
# Robertson, "Microsoft Cambridge at TREC-13: Web and HARD tracks", 2004;
# Robertson & Zaragoza 2009, eq. 3.18-3.19): each field's term frequency is
# normalised by that field's length relative to its own average, weighted
# (a title word counts `title_weight` times), and the fields are summed
# *before* the k1 saturation.  Summing per-field BM25 scores instead would
# saturate each field separately and over-reward a term present everywhere.
# A term filling a short title ("Workspace") therefore outweighs the same term
# in a longer one ("Workspace Actions").
#
# The constants are flags (flags.yaml `lexical:`, defaults in service/flags.py):
# - k1: how fast repeated occurrences stop adding (Robertson's usual 1.2-2.0
#   range; bm25s/Lucene use 1.2-1.5).
# - b: how much a long unit is penalised (0 = none, 1 = fully proportional to
#   length); 0.75 is the literature's default.
#
# The functions below work on numpy arrays: one call covers every unit that
# holds a query term (bm25f.py), which is what keeps 100k chunks fast.


def bm25_idf(document_frequency: int, unit_count: int) -> float:
    """``ln(1 + (N - df + 0.5) / (df + 0.5))``: never negative (Lucene's variant)."""
    return math.log(1.0 + (unit_count - document_frequency + 0.5) / (document_frequency + 0.5))


def bm25f_length_norm(lengths: Floats, average_length: float, b: float) -> Floats:
    """``1 - b + b · len / avg_len`` per unit for one field (1 when the field is empty everywhere)."""
    return 1.0 - b + b * (lengths / average_length if average_length > 0 else np.ones_like(lengths))


def bm25f_pseudo_tf(
    field_tfs: Sequence[npt.NDArray[np.float32]], norms: Sequence[Floats], weights: Sequence[float]
) -> Floats:
    """``Σ_field weight · tf / norm``: BM25F's pseudo-frequency, summed *before* saturation."""
    pseudo = np.zeros(len(field_tfs[0]), dtype=np.float64)
    for weight, tf, norm in zip(weights, field_tfs, norms, strict=True):
        if weight:
            pseudo += weight * tf / norm
    return pseudo


def bm25_saturate(idf: float, pseudo_tf: Floats, k1: float) -> Floats:
    """``idf · tf~ (k1 + 1) / (k1 + tf~)``: one term's contribution per unit."""
    result: Floats = idf * pseudo_tf * (k1 + 1.0) / (k1 + pseudo_tf)
    return result
