"""Keyword scoring of documents (phase 1) and chunks (phase 2).

Two formulas, picked by the `lexical.scorer` flag (an Enum-keyed choice):
- `seed`: the seed plan's points (title phrase +5, title token +3, keyword +2,
  content +1) divided by sqrt(content tokens) rank the units.
- `bm25`: BM25F over title, keywords and content (keyword_formulas.py) ranks
  the units; it sees term frequencies, document frequencies and a Snowball
  stem, which the presence-only seed formula does not.

Whatever ranks, every Evidence still carries the seed formula's guards
(`raw_score` in seed points, `title_or_keyword_hit`, `exact_title_phrase`,
`matched_terms`, computed on the plural-stem match keys exactly as before):
the decision layer's MIN_SCORE / MIN_GAP thresholds are in seed points.

Both phases score "units": a whole document, or a chunk that inherits its
document's title and keywords and whose own headings count as title words.
An inverted index keeps the work proportional to the units that share a
query term, not to the corpus size.
"""

from __future__ import annotations

import enum
import itertools
import re
import sys
import threading
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol

import numpy as np
import Stemmer  # PyStemmer: Snowball stemmers in C

from service.domain.types import Chunk, Document, Evidence, Source
from service.normalize.lexicon import Lexicon
from service.normalize.text import match_key
from service.scoring import keyword_formulas as formula

SNIPPET_CHARS = 240


class LexicalScorer(enum.Enum):
    seed = "seed"
    bm25 = "bm25"


def lexical_scorer(name: str) -> LexicalScorer:
    """Look a scorer up by name; an unknown name fails listing the valid ones."""
    try:
        return LexicalScorer(name.strip().lower())
    except ValueError:
        valid = ", ".join(m.value for m in LexicalScorer)
        raise ValueError(f"unknown lexical scorer {name!r}; valid: {valid}") from None


class LexicalConfig(Protocol):
    """What ranking needs (flags.LexicalFlags has exactly these fields)."""

    @property
    def scorer(self) -> str: ...
    @property
    def k1(self) -> float: ...
    @property
    def b(self) -> float: ...
    @property
    def title_weight(self) -> float: ...
    @property
    def keyword_weight(self) -> float: ...
    @property
    def content_weight(self) -> float: ...


@dataclass(frozen=True)
class LexicalParams:
    """Defaults of `lexical:` in flags.yaml (chosen from the Cranfield and golden runs)."""

    scorer: str = "bm25"
    k1: float = formula.BM25_K1
    b: float = formula.BM25_B
    title_weight: float = 2.0
    keyword_weight: float = 1.0
    content_weight: float = 1.0


DEFAULT_LEXICAL = LexicalParams()

_stemmers = threading.local()  # a PyStemmer object must not be shared across threads


def lexical_key(token: str) -> str:
    """BM25's term key: the Snowball (Porter 2) English stem of the match key.

    Broader than `match_key` ("aeroelastic"/"aeroelasticity" meet), so it is
    used for ranking only; the seed guards keep the plural-only match keys.
    """
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    key: str = stemmer.stemWord(match_key(token))
    return key


_NO_TF: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True)
class ScoringUnit:
    """A document or chunk prepared for scoring: match keys per field."""

    doc_slug: str
    title: str
    category: str
    content: str
    content_hash: str
    summary: str
    header_path: str | None
    chunk_index: int | None
    chunk_hash: str | None
    title_phrases: tuple[str, ...]
    """Key sequences (space-joined) of the title and of each heading."""
    title_keys: frozenset[str]
    keyword_keys: frozenset[str]
    content_keys: tuple[str, ...]
    """Sorted, distinct; a tuple is a third of a frozenset's size, and membership
    is only asked for the few units that make the cut (or in seed ranking)."""
    content_token_count: int
    plain: str = ""
    """The content without Markdown marks, whitespace collapsed: what snippets cut."""
    plain_lower: str = ""
    title_tf: Mapping[str, int] = field(default_factory=dict)
    """Lexical-key term frequencies per field (BM25F)."""
    keyword_tf: Mapping[str, int] = field(default_factory=dict)
    content_tf: Mapping[str, int] = field(default_factory=dict)
    title_length: int = 0
    keyword_length: int = 0

    def lexical_tf(self, key: str, params: LexicalConfig, averages: tuple[float, float, float]) -> float:
        """BM25F's pseudo-frequency: each field's tf, length-normalised against
        that field's average length, weighted, summed (before saturation)."""
        total = 0.0
        for weight, counts, length, average in (
            (params.title_weight, self.title_tf, self.title_length, averages[0]),
            (params.keyword_weight, self.keyword_tf, self.keyword_length, averages[1]),
            (params.content_weight, self.content_tf, self.content_token_count, averages[2]),
        ):
            tf = counts.get(key, 0)
            if tf and weight:
                total += weight * tf / formula.bm25f_length_norm(length, average, params.b)
        return total


def _keys(tokens: Iterable[str]) -> list[str]:
    return [sys.intern(match_key(t)) for t in tokens]


def unit_from_document(doc: Document, lexicon: Lexicon) -> ScoringUnit:
    return _make_unit(
        lexicon,
        doc_slug=doc.slug,
        title=doc.title,
        headings=(),
        category=doc.category,
        keywords=doc.keywords,
        content=doc.content,
        content_hash=doc.content_hash,
        summary=doc.summary,
        header_path=None,
        chunk_index=None,
        chunk_hash=None,
    )


def unit_from_chunk(chunk: Chunk, lexicon: Lexicon, content_hash: str, summary: str = "") -> ScoringUnit:
    headings = tuple(h for h in chunk.header_path.split(" > ") if h) if chunk.header_path else ()
    return _make_unit(
        lexicon,
        doc_slug=chunk.doc_slug,
        title=chunk.title,
        headings=headings,
        category=chunk.category,
        keywords=chunk.keywords,
        content=chunk.content,
        content_hash=content_hash,
        summary=summary,
        header_path=chunk.header_path or None,
        chunk_index=chunk.chunk_index,
        chunk_hash=chunk.chunk_hash,
    )


def _make_unit(
    lexicon: Lexicon,
    *,
    doc_slug: str,
    title: str,
    headings: tuple[str, ...],
    category: str,
    keywords: Sequence[str],
    content: str,
    content_hash: str,
    summary: str,
    header_path: str | None,
    chunk_index: int | None,
    chunk_hash: str | None,
) -> ScoringUnit:
    title_sequences = [_keys(lexicon.normalise(t)) for t in (title, *headings)]
    content_tokens = lexicon.normalise(content)
    keyword_tokens = [t for phrase in keywords for t in lexicon.normalise(phrase)]
    keyword_keys = set(_keys(keyword_tokens))
    title_tokens = [t for seq in title_sequences for t in seq]
    return ScoringUnit(
        doc_slug=doc_slug,
        title=title,
        category=category,
        content=content,
        plain=(plain := plain_text(content)),
        plain_lower=plain.lower(),
        content_hash=content_hash,
        summary=summary,
        header_path=header_path,
        chunk_index=chunk_index,
        chunk_hash=chunk_hash,
        title_phrases=tuple(" ".join(seq) for seq in title_sequences if seq),
        title_keys=frozenset(k for seq in title_sequences for k in seq),
        keyword_keys=frozenset(keyword_keys),
        content_keys=tuple(sorted(set(_keys(content_tokens)))),
        content_token_count=len(content_tokens),
        title_tf=_term_counts(title_tokens),
        keyword_tf=_term_counts(keyword_tokens),
        content_tf=_term_counts(content_tokens),
        title_length=len(title_tokens),
        keyword_length=len(keyword_tokens),
    )


def _term_counts(tokens: Iterable[str]) -> dict[str, int]:
    return dict(Counter(lexical_key(t) for t in tokens))


def is_exact_title_phrase(phrase_keys: Sequence[str], title_phrases: Sequence[str]) -> bool:
    """The query phrase is a whole title (or heading), or a 2+-word run inside one.

    A single word inside a longer title ("workspace" in "Workspace Actions") is
    a title token, not the exact phrase.
    """
    if not phrase_keys:
        return False
    phrase = " ".join(phrase_keys)
    for title in title_phrases:
        if title == phrase:
            return True
        if len(phrase_keys) >= 2 and f" {phrase} " in f" {title} ":
            return True
    return False


_MARKDOWN_NOISE = re.compile(r"(^|\n)#+\s*|[*_`>|]+")


def plain_text(markdown: str) -> str:
    """Markdown marks out, whitespace collapsed (done once per unit at index time)."""
    return " ".join(_MARKDOWN_NOISE.sub(" ", markdown).split())


def _first_word_start(lowered: str, term: str) -> int | None:
    """Index of the first occurrence of `term` that starts a word (plain `find`, no regex)."""
    at = lowered.find(term)
    while at != -1:
        if at == 0 or not lowered[at - 1].isalnum():
            return at
        at = lowered.find(term, at + 1)
    return None


def make_snippet(text: str, terms: Sequence[str], fallback: str = "", lowered: str | None = None) -> str:
    """A window of plain text around the first matched term, cut at word boundaries."""
    lowered = text.lower() if lowered is None else lowered
    positions = [p for t in terms if (p := _first_word_start(lowered, t)) is not None]
    if not positions:
        return fallback or text[:SNIPPET_CHARS].rsplit(" ", 1)[0]
    start = max(0, min(positions) - SNIPPET_CHARS // 3)
    if start:
        start = text.find(" ", start) + 1
    window = text[start : start + SNIPPET_CHARS]
    if start + SNIPPET_CHARS < len(text):
        window = window.rsplit(" ", 1)[0] + " …"
    return ("… " if start else "") + window


@dataclass
class _PostingArrays:
    """The inverted index as numpy arrays, so BM25F ranks 100k chunks in milliseconds.

    Per lexical (stemmed) key: the holding units and their title, keyword and
    content term frequencies.  Per unit: field lengths and category.  Whole
    titles and title bigrams map to units for the exact-title-phrase lift.
    """

    n_units: int
    lexical: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    match_keys: dict[str, np.ndarray]
    lengths: tuple[np.ndarray, np.ndarray, np.ndarray]
    categories: dict[str, np.ndarray]
    whole_titles: dict[str, list[int]]
    title_bigrams: dict[str, set[int]]

    def exact_title_units(self, keys: Sequence[str], units: Sequence[ScoringUnit]) -> list[int]:
        """Units whose title or heading is the query phrase (see is_exact_title_phrase)."""
        if not keys:
            return []
        found = set(self.whole_titles.get(" ".join(keys), ()))
        if len(keys) >= 2:
            pairs = [f"{a} {b}" for a, b in itertools.pairwise(keys)]
            holders = set.intersection(*(self.title_bigrams.get(p, set()) for p in pairs))
            found |= {u for u in holders if is_exact_title_phrase(keys, units[u].title_phrases)}
        return sorted(found)

    def rank_bm25(
        self,
        keys: Sequence[str],
        terms: list[tuple[str, str, float]],
        params: LexicalConfig,
        averages: tuple[float, float, float],
        category: str | None,
        limit: int,
        units: Sequence[ScoringUnit],
    ) -> tuple[dict[int, tuple[float, list[tuple[str, float]]]], float]:
        """Top `limit` units by BM25F (+ the exact-title lift), best first, each with
        its per-term contributions (for `match_explain`); and the lift."""
        scores = np.zeros(self.n_units, dtype=np.float64)
        candidate = np.zeros(self.n_units, dtype=bool)
        for key in keys:  # units the seed guards see count as candidates too
            held = self.match_keys.get(key)
            if held is not None:
                candidate[held] = True
        norms: list[np.ndarray] = [
            1.0 - params.b + params.b * (length / average if average > 0 else np.ones_like(length))
            for length, average in zip(self.lengths, averages, strict=True)
        ]
        weights = (params.title_weight, params.keyword_weight, params.content_weight)
        contributions: list[tuple[str, np.ndarray, np.ndarray]] = []
        for token, key, idf in terms:
            positions, *field_tf = self.lexical[key]
            pseudo = np.zeros(len(positions), dtype=np.float64)
            for weight, tf, norm in zip(weights, field_tf, norms, strict=True):
                if weight:
                    pseudo += weight * tf / norm[positions]
            contribution = idf * pseudo * (params.k1 + 1.0) / (params.k1 + pseudo)
            scores[positions] += contribution
            candidate[positions] = True
            contributions.append((token, positions, contribution))
        if category is not None:
            candidate &= self.categories.get(category, np.zeros(self.n_units, dtype=bool))
        pool = np.flatnonzero(candidate)
        # A unit whose title (or heading) is the query phrase ranks above every
        # other: navigational search's "exact title match" rule, which the seed
        # formula's +5 and halved length penalty express and BM25 cannot (a
        # word on every page has idf ~0). Its BM25 score is lifted by the best
        # BM25 score of the list, so `score` stays monotone in the ranking.
        lift = float(scores[pool].max()) if len(pool) else 0.0
        exact = [u for u in self.exact_title_units(keys, units) if candidate[u]]
        scores[exact] += lift
        if len(pool) > limit:
            pool = pool[np.argpartition(-scores[pool], limit - 1)[:limit]]
        ordered = sorted(
            pool.tolist(),
            key=lambda c: (-scores[c], units[c].doc_slug, units[c].chunk_index or 0),
        )
        parts: dict[int, list[tuple[str, float]]] = {c: [] for c in ordered}
        wanted = np.asarray(ordered, dtype=np.int64)
        for token, positions, contribution in contributions:
            at = np.minimum(np.searchsorted(positions, wanted), len(positions) - 1)
            for c, i, hit in zip(ordered, at.tolist(), (positions[at] == wanted).tolist(), strict=True):
                if hit and contribution[i] > 0:
                    parts[c].append((token, float(contribution[i])))
        return {c: (float(scores[c]), parts[c]) for c in ordered}, lift


class _PostingBuilder:
    """Streams units into compact posting buffers, so a unit's term counts are
    dropped as soon as they are recorded (building 100k chunks never holds
    100k dictionaries of counts at once)."""

    def __init__(self) -> None:
        self.match: dict[str, array[int]] = {}
        self.lexical: dict[str, tuple[array[int], array[float], array[float], array[float]]] = {}
        self.totals = [0, 0, 0]

    def add(self, position: int, unit: ScoringUnit) -> None:
        for key in {*unit.title_keys, *unit.keyword_keys, *unit.content_keys}:
            self.match.setdefault(key, array("i")).append(position)
        for key in unit.title_tf.keys() | unit.keyword_tf.keys() | unit.content_tf.keys():
            held = self.lexical.get(key)
            if held is None:
                held = self.lexical[key] = (array("i"), array("f"), array("f"), array("f"))
            held[0].append(position)
            held[1].append(unit.title_tf.get(key, 0))
            held[2].append(unit.keyword_tf.get(key, 0))
            held[3].append(unit.content_tf.get(key, 0))
        self.totals[0] += unit.title_length
        self.totals[1] += unit.keyword_length
        self.totals[2] += unit.content_token_count

    def finish(self, units: Sequence[ScoringUnit]) -> _PostingArrays:
        """Positions are ascending in every array (units are added in order)."""
        labels = np.asarray([u.category for u in units])
        whole: dict[str, list[int]] = defaultdict(list)
        bigrams: dict[str, set[int]] = defaultdict(set)
        for position, unit in enumerate(units):
            for phrase in unit.title_phrases:
                whole[phrase].append(position)
                for first, second in itertools.pairwise(phrase.split()):
                    bigrams[f"{first} {second}"].add(position)
        return _PostingArrays(
            n_units=len(units),
            # int32 positions and float32 counts: half the memory of numpy's defaults.
            lexical={
                key: (
                    np.frombuffer(pos, dtype=np.int32).copy(),
                    np.frombuffer(title, dtype=np.float32).copy(),
                    np.frombuffer(keyword, dtype=np.float32).copy(),
                    np.frombuffer(content, dtype=np.float32).copy(),
                )
                for key, (pos, title, keyword, content) in self.lexical.items()
            },
            match_keys={key: np.frombuffer(pos, dtype=np.int32).copy() for key, pos in self.match.items()},
            lengths=(
                np.asarray([u.title_length for u in units], dtype=np.float64),
                np.asarray([u.keyword_length for u in units], dtype=np.float64),
                np.asarray([u.content_token_count for u in units], dtype=np.float64),
            ),
            categories={c: labels == c for c in set(labels.tolist())},
            whole_titles=dict(whole),
            title_bigrams=dict(bigrams),
        )


@dataclass
class KeywordIndex:
    """Units plus an inverted index from match key to the units containing it."""

    units: list[ScoringUnit]
    arrays: _PostingArrays
    """The postings: build with `KeywordIndex.build`."""
    source: Source = "keyword"
    lexical: LexicalConfig = DEFAULT_LEXICAL
    """Ranking used when `search` is not given one (the flags normally are)."""
    field_totals: tuple[int, int, int] = (0, 0, 0)
    """Total title, keyword and content tokens (for BM25's average length)."""

    @classmethod
    def build(cls, units: Iterable[ScoringUnit], source: Source = "keyword") -> KeywordIndex:
        """Index units one at a time; the kept units carry no term counts (the
        posting arrays hold them)."""
        builder = _PostingBuilder()
        kept: list[ScoringUnit] = []
        for unit in units:
            builder.add(len(kept), unit)
            kept.append(replace(unit, title_tf=_NO_TF, keyword_tf=_NO_TF, content_tf=_NO_TF))
        totals = builder.totals
        return cls(
            units=kept, source=source, field_totals=(totals[0], totals[1], totals[2]),
            arrays=builder.finish(kept),
        )

    def average_lengths(self) -> tuple[float, float, float]:
        n = max(len(self.units), 1)
        title, keyword, content = self.field_totals
        return (title / n, keyword / n, content / n)

    def search(
        self,
        tokens: Sequence[str],
        *,
        category: str | None = None,
        limit: int = 50,
        notes: Sequence[str] = (),
        lexical: LexicalConfig | None = None,
    ) -> list[Evidence]:
        """Score every unit sharing a token; best first (ties broken by slug, index)."""
        params = lexical or self.lexical
        keys = _keys(tokens)
        bm25_terms = self._bm25_terms(tokens) if lexical_scorer(params.scorer) is LexicalScorer.bm25 else None
        # Rank on numbers first; explanations and snippets are built only for
        # the units that make the cut (most candidates of a common word never do).
        exact_lift = 0.0
        if bm25_terms is None:
            candidates: set[int] = set()
            for key in keys:
                held = self.arrays.match_keys.get(key)
                if held is not None:
                    candidates.update(held.tolist())
            if category is not None:
                candidates = {c for c in candidates if self.units[c].category == category}
            ranked = {c: seed_final(self.units[c], keys) for c in candidates}
            order = sorted(
                ranked,
                key=lambda c: (-ranked[c], self.units[c].doc_slug, self.units[c].chunk_index or 0),
            )[:limit]
        else:
            bm25 = self.arrays.rank_bm25(
                keys, bm25_terms, params, self.average_lengths(), category, limit, self.units
            )
            ranked_bm25, exact_lift = bm25
            order = list(ranked_bm25)
        results: list[Evidence] = []
        for position in order:
            unit = self.units[position]
            ranking = None
            if bm25_terms is not None:
                score, parts = ranked_bm25[position]
                total = sum(value for _, value in parts)
                terms_text = " + ".join(f"'{token}' {value:.3f}" for token, value in parts) or "0"
                line = f"bm25 (k1={params.k1:g}, b={params.b:g}): {terms_text} = {total:.3f}"
                if is_exact_title_phrase(keys, unit.title_phrases):
                    line += f"; exact title phrase + {exact_lift:.3f}"
                ranking = (score, line)
            results.append(score_unit(unit, tokens, keys, self.source, notes, ranking))
        return results

    def document_frequency(self, stem: str) -> int:
        """How many units hold a lexical (stemmed) key in any field."""
        held = self.arrays.lexical.get(stem)
        return 0 if held is None else len(held[0])

    def _bm25_terms(self, tokens: Sequence[str]) -> list[tuple[str, str, float]]:
        """(token, stem, idf) of each distinct query stem the corpus has."""
        n = len(self.units)
        terms: list[tuple[str, str, float]] = []
        seen: set[str] = set()
        for token in tokens:
            key = lexical_key(token)
            if key in seen:
                continue
            seen.add(key)
            df = self.document_frequency(key)
            if df:
                terms.append((token, key, formula.bm25_idf(df, n)))
        return terms


def _rank_key(evidence: Evidence) -> tuple[float, str, int]:
    return (-evidence.score, evidence.doc_slug, evidence.chunk_index or 0)


def seed_final(unit: ScoringUnit, keys: Sequence[str]) -> float:
    """The seed formula's ranking score, numbers only (see `score_unit`)."""
    exact = is_exact_title_phrase(keys, unit.title_phrases)
    title_hits = sum(k in unit.title_keys for k in keys)
    keyword_hits = sum(k in unit.keyword_keys for k in keys)
    content_hits = sum(k in unit.content_keys for k in keys)
    raw = formula.raw_points(
        exact_title_phrase=exact, title_hits=title_hits,
        keyword_hits=keyword_hits, content_hits=content_hits,
    )
    return round(raw / formula.length_divisor(unit.content_token_count, exact), 6)


def score_unit(
    unit: ScoringUnit,
    tokens: Sequence[str],
    keys: Sequence[str],
    source: Source = "keyword",
    notes: Sequence[str] = (),
    ranking: tuple[float, str] | None = None,
) -> Evidence:
    """Apply the seed formula to one unit and explain every point.

    `ranking` (score, explanation), when given, replaces the seed formula's
    normalised score as the ranking `score`; the seed guards are unchanged.
    """
    explain: list[str] = list(notes)
    exact = is_exact_title_phrase(keys, unit.title_phrases)
    if exact:
        explain.append(f"exact phrase in title '{' '.join(tokens)}' +5")
    title_hits = keyword_hits = content_hits = 0
    matched: list[str] = []
    for token, key in zip(tokens, keys, strict=True):
        hit = False
        if key in unit.title_keys:
            title_hits += 1
            hit = True
            explain.append(f"title token '{token}' +3")
        if key in unit.keyword_keys:
            keyword_hits += 1
            hit = True
            explain.append(f"keyword '{token}' +2")
        if key in unit.content_keys:
            content_hits += 1
            hit = True
            explain.append(f"content '{token}' +1")
        if hit and token not in matched:
            matched.append(token)
    raw = formula.raw_points(
        exact_title_phrase=exact,
        title_hits=title_hits,
        keyword_hits=keyword_hits,
        content_hits=content_hits,
    )
    divisor = formula.length_divisor(unit.content_token_count, exact)
    final = raw / divisor
    half = " (penalty halved: exact title phrase)" if exact else ""
    explain.append(
        f"raw {raw:g} / {divisor:.2f} (√{unit.content_token_count} content tokens){half} = {final:.3f}"
    )
    seed_score: float | None = None
    if ranking is not None:
        seed_score, final = round(final, 6), ranking[0]
        explain.append(f"ranking score: {ranking[1]}")
    return Evidence(
        doc_slug=unit.doc_slug,
        title=unit.title,
        category=unit.category,
        snippet=make_snippet(unit.plain, matched, unit.summary, unit.plain_lower),
        score=round(final, 6),
        content_hash=unit.content_hash,
        matched_terms=tuple(matched),
        source=source,
        header_path=unit.header_path,
        match_explain=tuple(explain),
        chunk_index=unit.chunk_index,
        chunk_hash=unit.chunk_hash,
        raw_score=raw,
        seed_score=seed_score,
        title_or_keyword_hit=title_hits + keyword_hits > 0,
        exact_title_phrase=exact,
    )


def build_document_index(documents: Iterable[Document], lexicon: Lexicon) -> KeywordIndex:
    return KeywordIndex.build(unit_from_document(d, lexicon) for d in documents)


def build_chunk_index(
    chunks: Iterable[Chunk],
    lexicon: Lexicon,
    doc_info: Callable[[str], tuple[str, str]],
) -> KeywordIndex:
    """`doc_info(slug)` gives the parent document's (content_hash, summary)."""
    return KeywordIndex.build(
        unit_from_chunk(chunk, lexicon, *doc_info(chunk.doc_slug)) for chunk in chunks
    )
