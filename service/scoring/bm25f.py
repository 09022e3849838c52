"""BM25F ranking over the posting arrays (the formulas: keyword_formulas.py).

BM25F sees term frequencies, document frequencies and a Snowball stem over
title, keywords and content, which the presence-only seed formula does not.
A query's identifiers (issue 42) add their whole and compact keys as terms,
which also count the names a unit shows (the identifier field, not
length-normalised, keyed unstemmed: `pytest_addoption` is not `PYTEST_ADDOPTS`),
and a unit that defines the name scores a term of its own (`_definitions`; less
when the query is a task that uses the name: `definition_share`), and a unit
that writes a name beside the query word next to it (`rewrite --exclude`) one
more (`_side_by_side`). The query's words, a name's parts among them, are
ranked as before.
Only the ranking score comes from here; the seed guards still come from
seed.py.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from service.domain.identifiers import compact_key, is_separated, whole_key
from service.domain.identifiers import parts as identifier_parts
from service.flags import LexicalFlags
from service.scoring import keyword_formulas as formula
from service.scoring.lexical_units import ScoringUnit
from service.scoring.postings import Positions, PostingArrays
from service.scoring.stemming import lexical_key


@dataclass(frozen=True)
class QueryTerm:
    token: str
    key: str
    """The token's lexical key (stem); an identifier's: its compact form's."""
    idf: float
    spelled: str | None = None
    """An identifier's term (None: a word): its whole form where it has separators and some
    unit shows it (`after_this_request`; else None). A unit holding either the compact key
    (`afterthisrequest`, in its text or among its names) or this one holds the term, once."""
    defined_by: str | None = None
    """The key the identifier's definitions are found by: a unit that defines the name scores
    a term of its own (`_definitions`)."""
    named: bool = False
    """An identifier's term: it also counts the names the units show (the identifier field)."""
    name_key: str | None = None
    """An identifier's compact form, unstemmed: the key of the names a unit shows that are this
    name (`PYTEST_ADDOPTS`, `pytest_addopts`), never another one that stems alike
    (`pytest_addoption`: Snowball cuts both to `pytestaddopt`)."""


@dataclass(frozen=True)
class Ranked:
    """A unit's BM25F score and each query token's part of it (for `match_explain`)."""

    score: float
    parts: tuple[tuple[str, float], ...]


def query_terms(tokens: Sequence[str], postings: PostingArrays, names: Sequence[str] = ()) -> list[QueryTerm]:
    """Each distinct query stem the corpus has, with its idf; then each of the query's
    identifiers (`names`) as one term (`identifier_term`)."""
    named = {term.key: term for name in names if (term := identifier_term(name, postings)) is not None}
    terms: list[QueryTerm] = []
    seen: set[str] = set()
    for token in tokens:
        key = lexical_key(token)
        if key in seen or key in named:  # a name that is one word (`ProxyFix`, `--cache`) is its term
            continue
        seen.add(key)
        df = postings.document_frequency(key)
        if df:
            terms.append(QueryTerm(token, key, formula.bm25_idf(df, postings.n_units)))
    return [*terms, *named.values()]


def identifier_term(name: str, postings: PostingArrays) -> QueryTerm | None:
    """A query's identifier as one term: held by a unit that shows the name as the query writes
    it (`after_this_request`: a key only the identifier field has) or in compact form (`print_width`
    finds `printWidth`, `ProxyFix` the word `proxyfix` of a page's code); its definitions are those
    of the spelling some unit defines, else of the compact form (`proxy_fix` finds `ProxyFix`'s
    API entry). None when no unit holds it."""
    compact = compact_key(name)
    whole = whole_key(name)
    key = lexical_key(compact)
    spelled = whole if is_separated(whole) and whole in postings.names else None
    df = len(_holders(postings, key, compact, spelled))
    if not compact or not df:
        return None
    defined_by = next((k for k in (spelled, compact) if k is not None and postings.defines(k)), None)
    return QueryTerm(name, key, formula.bm25_idf(df, postings.n_units), spelled, defined_by, named=True,
                     name_key=compact)


def _holders(postings: PostingArrays, key: str, name_key: str, spelled: str | None) -> Positions:
    """Units whose text has the name's compact form as a word (`key`, stemmed like every word) or
    that show the name itself (`name_key`, `spelled`)."""
    held = [p.positions for p in (postings.lexical.get(key), postings.names.get(name_key)) if p is not None]
    if spelled is not None:
        held.append(postings.names[spelled].positions)
    return np.unique(np.concatenate(held)).astype(np.int32) if held else np.zeros(0, dtype=np.int32)


Field = tuple[npt.NDArray[np.float32], formula.Floats, float]
"""A field's term frequencies, length norms and weight, over one term's units."""


def _term_fields(
    term: QueryTerm, postings: PostingArrays, norms: Sequence[formula.Floats], params: LexicalFlags,
) -> tuple[Positions, list[Field]]:
    """The units holding a term and its fields over them: the text's three, and for an
    identifier the names the units show (not length-normalised: a name is shown or not, however
    many others a unit shows; a unit showing both spellings counts the more shown one)."""
    text = postings.lexical.get(term.key)
    weights = (params.title_weight, params.keyword_weight, params.content_weight)
    if not term.named:
        assert text is not None  # query_terms keeps only the words some unit holds
        tfs = (text.title_tf, text.keyword_tf, text.content_tf)
        return text.positions, [(tf, norm[text.positions], w) for tf, norm, w in zip(tfs, norms, weights, strict=True)]
    assert term.name_key is not None  # identifier_term sets it
    positions = _holders(postings, term.key, term.name_key, term.spelled)
    fields: list[Field] = []
    if text is not None:
        at = np.searchsorted(positions, text.positions)
        for tf, norm, weight in zip((text.title_tf, text.keyword_tf, text.content_tf), norms, weights, strict=True):
            fields.append((_spread(tf, at, len(positions)), norm[positions], weight))
    shown = np.zeros(len(positions), dtype=np.float32)
    for key in (term.name_key, term.spelled):
        held = postings.names.get(key) if key is not None else None
        if held is not None:
            at = np.searchsorted(positions, held.positions)
            shown[at] = np.maximum(shown[at], held.shown_tf)
    fields.append((shown, np.ones(len(positions)), params.identifier_weight))
    return positions, fields


def _holds(positions: Positions, unit: int) -> bool:
    at = int(np.searchsorted(positions, unit))
    return at < len(positions) and int(positions[at]) == unit


def _spread(tf: npt.NDArray[np.float32], at: npt.NDArray[np.intp], size: int) -> npt.NDArray[np.float32]:
    out = np.zeros(size, dtype=np.float32)
    out[at] = tf
    return out


def _definitions(
    term: QueryTerm, postings: PostingArrays, params: LexicalFlags, share: float,
) -> tuple[Positions, formula.Floats] | None:
    """Defining the query's name is a term of its own (`definition_weight` occurrences per
    definition, saturated), with the idf of the units that define it: rarer than those that
    show it, so the page that defines or explains a name outranks the pages that use it;
    `share` of it (`definition_share`)."""
    shown = postings.names.get(term.defined_by) if term.defined_by and params.identifier_weight else None
    if shown is None or shown.defined_tf is None:
        return None
    at = np.flatnonzero(shown.defined_tf)
    idf = formula.bm25_idf(len(at), postings.n_units)
    tf = params.definition_weight * shown.defined_tf[at].astype(np.float64)
    return shown.positions[at], share * formula.bm25_saturate(idf, tf, params.k1)


KIND_WORDS = frozenset(lexical_key(word) for word in (
    "function", "method", "class", "option", "flag", "argument", "parameter", "setting", "key",
    "variable", "hook", "signal", "event", "component", "decorator", "property", "attribute",
    "field", "module", "command", "directive", "callback", "prop", "macro", "filter",
))
"""Words that say what kind of thing a name is ("`task_failure` signal arguments", "`PageTitle`
component"): a query holding them beside a name is still about the name."""


def definition_share(terms: Sequence[QueryTerm], params: LexicalFlags) -> float:
    """How much a definition counts: whole while the query is about its names (`PageTitle`,
    `configureServer hook`: at most `definition_words` other words), less as the query becomes a
    task that uses a name ("override PageTitle and read the current page's frontmatter inside
    it": the guide that does that, not the reference listing `PageTitle`). A name's own parts
    (`foam`, `query` of `foam-query`) and words of its kind (`KIND_WORDS`) are not other words."""
    parts = {lexical_key(part) for term in terms if term.named for part in identifier_parts(term.token)}
    words = sum(1 for term in terms if not term.named and term.key not in parts and term.key not in KIND_WORDS)
    return min(1.0, (1 + params.definition_words) / (1 + words))


def _side_by_side(
    phrase: str, term: QueryTerm, holders: Positions, units: Sequence[ScoringUnit], n_units: int,
    params: LexicalFlags,
) -> tuple[Positions, formula.Floats] | None:
    """A name written beside the query word next to it (`rewrite --exclude`: a command and its
    option in one command line) is a term of its own, held by the units among the name's holders
    whose text has the two together (`phrase_weight` occurrences each time, saturated; the idf of
    those units). None for another name's phrase, or where no unit writes them together."""
    if not params.phrase_weight or not term.named or term.token.lower() not in phrase.split(" "):
        return None
    pattern = _phrase_pattern(phrase)
    counts = np.array([len(pattern.findall(units[u].content)) for u in holders.tolist()], dtype=np.float64)
    at = np.flatnonzero(counts)
    if not len(at):
        return None
    idf = formula.bm25_idf(len(at), n_units)
    return holders[at], formula.bm25_saturate(idf, params.phrase_weight * counts[at], params.k1)


@functools.lru_cache(maxsize=256)
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """The two words with any spacing between them, not inside a longer name (`--read-data` is
    not in `--read-data-subset`), in any case."""
    first, second = (re.escape(word) for word in phrase.split(" ", 1))
    return re.compile(rf"(?<![\w$@.-]){first}[ \t]+{second}(?![\w$-])", re.IGNORECASE)


def rank_bm25f(
    postings: PostingArrays,
    units: Sequence[ScoringUnit],
    keys: Sequence[str],
    terms: Sequence[QueryTerm],
    params: LexicalFlags,
    category: str | None,
    limit: int,
    phrases: Sequence[str] = (),
) -> tuple[dict[int, Ranked], float]:
    """Top `limit` units by BM25F (+ the exact-title lift), best first (ties:
    slug, chunk index); and the lift. `phrases`: the query's names each with the word beside
    it (`NormalizedQuery.name_phrases`), a term of their own (`_side_by_side`)."""
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
    contributions: list[tuple[str, Positions, formula.Floats]] = []
    pending = list(dict.fromkeys(phrases))
    share = definition_share(terms, params)
    names_held: list[Positions] = []
    for term in terms:
        positions, fields = _term_fields(term, postings, norms, params)
        if term.named:
            names_held.append(positions)
        pseudo = formula.bm25f_pseudo_tf([f[0] for f in fields], [f[1] for f in fields], [f[2] for f in fields])
        contribution = formula.bm25_saturate(term.idf, pseudo, params.k1)
        scores[positions] += contribution
        candidate[positions] = True
        contributions.append((term.token, positions, contribution))
        defined = _definitions(term, postings, params, share)
        if defined is not None:
            at, extra = defined
            scores[at] += extra
            contributions.append((f"{term.token} defined", at, extra))
        for phrase in list(pending):
            together = _side_by_side(phrase, term, positions, units, postings.n_units, params)
            if together is not None:
                pending.remove(phrase)  # a phrase of two names counts once
                scores[together[0]] += together[1]
                candidate[together[0]] = True
                contributions.append((phrase, *together))
    if category is not None:
        candidate &= postings.categories.get(category, np.zeros(n, dtype=bool))
    pool = np.flatnonzero(candidate)
    # A unit whose title (or heading) is the query phrase ranks above every
    # other: navigational search's "exact title match" rule, which the seed
    # formula's +5 and halved length penalty express and BM25 cannot (a word
    # on every page has idf ~0). Its BM25 score is lifted by the best BM25
    # score of the list, so `score` stays monotone in the ranking.
    lift = float(scores[pool].max()) if len(pool) else 0.0
    # A query's name is its phrase only where the unit shows that name: "PYTEST_ADDOPTS" is no
    # title phrase of "Using hooks in pytest_addoption", whose words stem alike.
    exact = [u for u in postings.exact_title_units(keys, units)
             if candidate[u] and all(_holds(held, u) for held in names_held)]
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
