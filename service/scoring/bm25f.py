"""BM25F ranking over the posting arrays (the formulas: keyword_formulas.py).

BM25F sees term frequencies, document frequencies and a Snowball stem over
title, keywords and content, which the presence-only seed formula does not.
A query's identifiers (issue 42) add their whole and compact keys as terms;
those and the identifiers' parts also count the names a unit shows (the
identifier field, not length-normalised), and a unit that defines the name
scores a term of its own (`_definitions`). A word the query does not write as
a name is ranked as before.
Only the ranking score comes from here; the seed guards still come from
seed.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from service.domain.identifiers import compact_key, is_separated, parts, whole_key
from service.flags import LexicalFlags
from service.scoring import keyword_formulas as formula
from service.scoring.lexical_units import ScoringUnit
from service.scoring.postings import LexicalPosting, Positions, PostingArrays
from service.scoring.stemming import lexical_key


@dataclass(frozen=True)
class QueryTerm:
    token: str
    key: str
    """The token's lexical key (stem)."""
    idf: float
    named: bool = False
    """The term comes from one of the query's identifiers (whole or a part): it is looked up
    among the names a unit shows (the identifier field) as well as in its text."""
    whole: bool = False
    """The term is a query identifier's compact key: a unit that defines the name, in whichever
    spelling, scores it twice (`_definitions`)."""


@dataclass(frozen=True)
class Ranked:
    """A unit's BM25F score and each query token's part of it (for `match_explain`)."""

    score: float
    parts: tuple[tuple[str, float], ...]


def query_terms(tokens: Sequence[str], postings: PostingArrays, names: Sequence[str] = ()) -> list[QueryTerm]:
    """Each distinct query stem the corpus has, with its idf; then each of the query's
    identifiers (`names`) by its key (`identifier_query_key`)."""
    keyed = [(token, lexical_key(token)) for token in tokens]
    whole = [(name if is_separated(key) else compact_key(name), key)
             for name in names for key in identifier_query_keys(name, postings)]
    keyed += whole
    own = {lexical_key(compact) for name in names if (compact := compact_key(name))}
    named = own | {key for _, key in whole} | {lexical_key(part) for name in names for part in parts(name)}
    terms: list[QueryTerm] = []
    seen: set[str] = set()
    for token, key in keyed:
        if key in seen:
            continue
        seen.add(key)
        df = postings.document_frequency(key)
        if df:
            terms.append(QueryTerm(token, key, formula.bm25_idf(df, postings.n_units), key in named, key in own))
    return terms


def identifier_query_keys(name: str, postings: PostingArrays) -> list[str]:
    """The keys a query's identifier is searched by, besides its parts (which are query tokens):
    its whole form where the corpus has it (`after_this_request`: only the identifier field holds
    it) and its compact form as a word (`print_width` finds `printWidth`, `ProxyFix` the
    `proxyfix` of a page's code). A unit that writes the name as the query does holds both."""
    whole = whole_key(name)
    keys = [whole] if is_separated(whole) and postings.document_frequency(whole) else []
    if compact := compact_key(name):
        keys.append(lexical_key(compact))
    return keys


def _definitions(
    term: QueryTerm, posting: LexicalPosting, params: LexicalFlags, n_units: int,
) -> tuple[npt.NDArray[np.intp], formula.Floats] | None:
    """Defining the query's name is a term of its own (`definition_weight` occurrences per
    definition, saturated), with the idf of the units that define it: rarer than those that
    show it, so the page that defines or explains a name outranks the pages that use it."""
    tf = posting.definition_tf
    if tf is None or not term.whole or not params.identifier_weight:
        return None
    at = np.flatnonzero(tf)
    idf = formula.bm25_idf(len(at), n_units)
    return at, formula.bm25_saturate(idf, params.definition_weight * tf[at].astype(np.float64), params.k1)


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
    title_norm, keyword_norm, content_norm = (
        formula.bm25f_length_norm(length, average, params.b)
        for length, average in zip(postings.lengths, postings.average_lengths, strict=True)
    )
    unnormed = np.ones(n, dtype=np.float64)  # the identifier field: a name counts whatever else a unit shows
    contributions: list[tuple[str, Positions, formula.Floats]] = []
    for term in terms:
        posting = postings.lexical[term.key]
        positions = posting.positions
        fields = [
            (posting.title_tf, title_norm, params.title_weight),
            (posting.keyword_tf, keyword_norm, params.keyword_weight),
            (posting.content_tf, content_norm, params.content_weight),
        ]
        if posting.identifier_tf is not None and term.named:  # a word the query writes as a name
            fields.append((posting.identifier_tf, unnormed, params.identifier_weight))
        pseudo = formula.bm25f_pseudo_tf(
            [tf for tf, _, _ in fields], [norm[positions] for _, norm, _ in fields], [w for _, _, w in fields],
        )
        contribution = formula.bm25_saturate(term.idf, pseudo, params.k1)
        scores[positions] += contribution
        candidate[positions] = True
        contributions.append((term.token, positions, contribution))
        defined = _definitions(term, posting, params, n)
        if defined is not None:
            at, extra = defined
            scores[positions[at]] += extra
            contributions.append((f"{term.token} defined", positions[at], extra))
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
