"""BM25F ranking over the posting arrays (the formulas: keyword_formulas.py).

BM25F sees term frequencies, document frequencies and a Snowball stem over
title, keywords and content, which the presence-only seed formula does not.
Only the ranking score comes from here; the seed guards still come from
seed.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from service.flags import LexicalFlags
from service.scoring import keyword_formulas as formula
from service.scoring.lexical_units import ScoringUnit
from service.scoring.postings import Positions, PostingArrays
from service.scoring.stemming import lexical_key


@dataclass(frozen=True)
class QueryTerm:
    token: str
    key: str
    """The token's lexical key (stem)."""
    idf: float


@dataclass(frozen=True)
class Ranked:
    """A unit's BM25F score and each query token's part of it (for `match_explain`)."""

    score: float
    parts: tuple[tuple[str, float], ...]


def query_terms(tokens: Sequence[str], postings: PostingArrays) -> list[QueryTerm]:
    """Each distinct query stem the corpus has, with its idf."""
    terms: list[QueryTerm] = []
    seen: set[str] = set()
    for token in tokens:
        key = lexical_key(token)
        if key in seen:
            continue
        seen.add(key)
        df = postings.document_frequency(key)
        if df:
            terms.append(QueryTerm(token, key, formula.bm25_idf(df, postings.n_units)))
    return terms


def rank_bm25f(
    postings: PostingArrays,
    units: Sequence[ScoringUnit],
    keys: Sequence[str],
    terms: Sequence[QueryTerm],
    params: LexicalFlags,
    category: str | None,
    limit: int,
) -> tuple[dict[int, Ranked], float]:
    """Top `limit` units by BM25F (+ the exact-title lift), best first (ties:
    slug, chunk index); and the lift."""
    n = postings.n_units
    scores = np.zeros(n, dtype=np.float64)
    candidate = np.zeros(n, dtype=bool)
    for key in keys:  # units the seed guards see count as candidates too
        held = postings.match_keys.get(key)
        if held is not None:
            candidate[held] = True
    norms = [
        formula.bm25f_length_norm(length, average, params.b)
        for length, average in zip(postings.lengths, postings.average_lengths, strict=True)
    ]
    weights = (params.title_weight, params.keyword_weight, params.content_weight)
    contributions: list[tuple[str, Positions, formula.Floats]] = []
    for term in terms:
        posting = postings.lexical[term.key]
        positions = posting.positions
        pseudo = formula.bm25f_pseudo_tf(
            (posting.title_tf, posting.keyword_tf, posting.content_tf),
            [norm[positions] for norm in norms],
            weights,
        )
        contribution = formula.bm25_saturate(term.idf, pseudo, params.k1)
        scores[positions] += contribution
        candidate[positions] = True
        contributions.append((term.token, positions, contribution))
    if category is not None:
        candidate &= postings.categories.get(category, np.zeros(n, dtype=bool))
    pool = np.flatnonzero(candidate)
    # A unit whose title (or heading) is the query phrase ranks above every
    # other: navigational search's "exact title match" rule, which the seed
    # formula's +5 and halved length penalty express and BM25 cannot (a word
    # on every page has idf ~0). Its BM25 score is lifted by the best BM25
    # score of the list, so `score` stays monotone in the ranking.
    lift = float(scores[pool].max()) if len(pool) else 0.0
    exact = [u for u in postings.exact_title_units(keys, units) if candidate[u]]
    scores[exact] += lift
    if len(pool) > limit:
        pool = pool[np.argpartition(-scores[pool], limit - 1)[:limit]]
    ordered = sorted(pool.tolist(), key=lambda c: (-scores[c], units[c].doc_slug, units[c].chunk_index or 0))
    parts: dict[int, list[tuple[str, float]]] = {c: [] for c in ordered}
    wanted = np.asarray(ordered, dtype=np.int64)
    for token, positions, contribution in contributions:
        at = np.minimum(np.searchsorted(positions, wanted), len(positions) - 1)
        for c, i, hit in zip(ordered, at.tolist(), (positions[at] == wanted).tolist(), strict=True):
            if hit and contribution[i] > 0:
                parts[c].append((token, float(contribution[i])))
    return {c: Ranked(float(scores[c]), tuple(parts[c])) for c in ordered}, lift


def explain_bm25f(ranked: Ranked, params: LexicalFlags, exact_title_phrase: bool, lift: float) -> str:
    """`bm25 (k1=…, b=…): 'term' 0.123 + … = total[; exact title phrase + lift = score]`: the
    line ends on the unit's score (issue 35: the explanation explains the very number shown)."""
    total = sum(value for _, value in ranked.parts)
    terms_text = " + ".join(f"'{token}' {value:.3f}" for token, value in ranked.parts) or "0"
    line = f"bm25 (k1={params.k1:g}, b={params.b:g}): {terms_text} = {total:.3f}"
    if exact_title_phrase:
        line += f"; exact title phrase + {lift:.3f} = {total + lift:.4f}"
    return line
