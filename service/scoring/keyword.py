"""Keyword scoring of documents (phase 1) and chunks (phase 2): the KeywordIndex facade.

Two rankings, picked by the `lexical.scorer` flag (an Enum-keyed table):
- `seed`: the seed plan's points divided by sqrt(content tokens) (seed.py);
- `bm25`: BM25F over title, keywords and content (bm25f.py).

Whatever ranks, every Evidence carries the seed formula's guards (seed.py):
the decision layer's thresholds are in seed points.  The other jobs live in
their own modules: the unit model (lexical_units.py), the term keys
(stemming.py), the posting arrays (postings.py), snippets (snippets.py) and
the formulas as pure math (keyword_formulas.py).  An inverted index keeps the
work proportional to the units that share a query term, not to the corpus
size; explanations and snippets are built only for the units that make the cut.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from service.domain.types import Chunk, Document, Evidence, Source
from service.flags import LexicalFlags
from service.ingest.identifiers import Identifier
from service.normalize.lexicon import Lexicon
from service.scoring.bm25f import Ranked, explain_bm25f, query_terms, rank_bm25f
from service.scoring.lexical_units import (
    PreparedUnit,
    ScoringUnit,
    prepare_chunk,
    prepare_document,
)
from service.scoring.plan_points import (
    SeedMatch,
    explain_seed,
    matched_tokens,
    rank_seed,
    seed_match,
)
from service.scoring.postings import PostingArrays, PostingBuilder
from service.scoring.snippets import make_snippet, plain_text
from service.scoring.stemming import match_keys

__all__ = [
    "KeywordHits",
    "KeywordIndex",
    "LexicalScorer",
    "build_chunk_index",
    "build_document_index",
    "lexical_scorer",
    "make_snippet",
    "plain_text",
]


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


@dataclass(frozen=True)
class _Ranking:
    order: list[int]
    """Unit positions, best first."""
    bm25f: dict[int, Ranked] | None = None
    """BM25F's score per unit when it ranks (the seed score is then kept as `seed_score`)."""
    lift: float = 0.0
    """BM25F's exact-title lift."""


@dataclass
class _Query:
    tokens: Sequence[str]
    keys: list[str]
    category: str | None
    limit: int
    params: LexicalFlags
    names: Sequence[str] = ()
    """The query's identifiers (`NormalizedQuery.identifiers`): BM25F searches them whole too."""
    phrases: Sequence[str] = ()
    """A name with the query word beside it (`NormalizedQuery.name_phrases`)."""
    phrase: str = field(init=False)
    """The whole query as one key sequence, compared with every ranked unit's title and keywords."""

    def __post_init__(self) -> None:
        self.phrase = " ".join(self.keys)


@dataclass
class KeywordIndex:
    """Units plus their posting arrays; build with `KeywordIndex.build`."""

    units: list[ScoringUnit]
    postings: PostingArrays
    source: Source = "keyword"

    @classmethod
    def build(cls, prepared: Iterable[PreparedUnit], source: Source = "keyword") -> KeywordIndex:
        """Index units one at a time; their term counts go into the postings and are dropped."""
        builder = PostingBuilder()
        units: list[ScoringUnit] = []
        for unit, terms in prepared:
            builder.add(len(units), unit, terms)
            units.append(unit)
        return cls(units=units, postings=builder.finish(units), source=source)

    def search(
        self,
        tokens: Sequence[str],
        *,
        category: str | None = None,
        limit: int = 50,
        notes: Sequence[str] = (),
        lexical: LexicalFlags | None = None,
        identifiers: Sequence[str] = (),
        phrases: Sequence[str] = (),
    ) -> list[Evidence]:
        """Score every unit sharing a token; best first (ties broken by slug, index).

        `lexical` is the `lexical:` flags group (its schema defaults when omitted); `identifiers`
        the query's (`NormalizedQuery.identifiers`), which BM25F also looks up whole, and `phrases`
        each with a query word beside it (`NormalizedQuery.name_phrases`).
        """
        query, ranking = self._rank(tokens, category, limit, lexical, identifiers, phrases)
        return [_evidence(self.units[position], position, query, ranking, self.source, notes) for position in ranking.order]

    def search_unexplained(
        self,
        tokens: Sequence[str],
        *,
        category: str | None = None,
        limit: int = 50,
        notes: Sequence[str] = (),
        lexical: LexicalFlags | None = None,
        identifiers: Sequence[str] = (),
        phrases: Sequence[str] = (),
    ) -> KeywordHits:
        """`search`'s ranking with the numbers and guards only (no snippet, no explanation):
        for a caller that shows few of its candidates (phase 3 fuses them first)."""
        query, ranking = self._rank(tokens, category, limit, lexical, identifiers, phrases)
        return KeywordHits(
            [_numbers(self.units[position], position, query, ranking, self.source) for position in ranking.order],
            self, query, ranking, notes,
        )

    def _rank(
        self, tokens: Sequence[str], category: str | None, limit: int, lexical: LexicalFlags | None,
        identifiers: Sequence[str] = (), phrases: Sequence[str] = (),
    ) -> tuple[_Query, _Ranking]:
        query = _Query(tokens, match_keys(tokens), category, limit, lexical or LexicalFlags(), identifiers, phrases)
        return query, _RANKERS[lexical_scorer(query.params.scorer)](self, query)


@dataclass(frozen=True)
class KeywordHits:
    """A keyword ranking whose evidence lacks snippet and `match_explain` until `explained`."""

    results: list[Evidence]
    index: KeywordIndex
    query: _Query
    ranking: _Ranking
    notes: Sequence[str]

    def explained(self, evidence: Evidence) -> Evidence:
        """`search`'s evidence for one of `results`, with the score and the lines a decision
        gave it kept ("ranked first: …" raises a score); any other evidence (e.g. from another
        search) unchanged."""
        if evidence.snippet:
            return evidence
        numbers = msgspec.structs.replace(evidence, match_explain=())
        for at, position in enumerate(self.ranking.order):
            found = self.results[at]
            same_unit = found.doc_slug == evidence.doc_slug and found.chunk_index == evidence.chunk_index
            if same_unit and numbers == msgspec.structs.replace(found, score=evidence.score):
                full = _evidence(
                    self.index.units[position], position, self.query, self.ranking, self.index.source, self.notes,
                )
                lifted = shown_score(evidence.score, found.score)
                return msgspec.structs.replace(
                    full, score=evidence.score,
                    match_explain=(*full.match_explain, *lifted, *evidence.match_explain),
                )
        return evidence


def shown_score(shown: float, own: float) -> tuple[str, ...]:
    """The line that explains the score a response carries when a decision raised it above the
    candidate's own (a page put first takes the best score, so the results stay in score order):
    the explanation must end on the very number shown."""
    if abs(shown - own) < 5e-5:
        return ()
    return (f"score shown {shown:.4f} = the best score of these results, given to the page put first"
            f" (its own score is {own:.4f}; why it is first: below)",)


def _rank_seed(index: KeywordIndex, query: _Query) -> _Ranking:
    return _Ranking(rank_seed(index.postings, index.units, query.keys, query.category, query.limit))


def _rank_bm25(index: KeywordIndex, query: _Query) -> _Ranking:
    terms = query_terms(query.tokens, index.postings, query.names)
    ranked, lift = rank_bm25f(index.postings, index.units, query.keys, terms, query.params, query.category, query.limit,
                              query.phrases)
    return _Ranking(list(ranked), ranked, lift)


_RANKERS: dict[LexicalScorer, Callable[[KeywordIndex, _Query], _Ranking]] = {
    LexicalScorer.seed: _rank_seed,
    LexicalScorer.bm25: _rank_bm25,
}


def _evidence(
    unit: ScoringUnit, position: int, query: _Query, ranking: _Ranking, source: Source, notes: Sequence[str]
) -> Evidence:
    """One unit's Evidence: the seed guards and explanation, plus BM25F's score
    and explanation when BM25F ranks."""
    match = seed_match(unit, query.keys)
    matched, lines = explain_seed(match, query.tokens)
    explain = [*notes, *lines]
    if ranking.bm25f is not None:
        ranked = ranking.bm25f[position]
        explain.append(
            f"ranking score: {explain_bm25f(ranked, query.params, match.exact_title_phrase, ranking.lift)}"
        )
    return msgspec.structs.replace(
        _numbers(unit, position, query, ranking, source, match),
        snippet=make_snippet(unit.plain, matched, unit.summary, unit.plain_lower),
        match_explain=tuple(explain),
    )


def _numbers(
    unit: ScoringUnit, position: int, query: _Query, ranking: _Ranking, source: Source, match: SeedMatch | None = None,
) -> Evidence:
    """`_evidence` without the text (snippet, `match_explain`): same scores, matched terms and guards."""
    match = seed_match(unit, query.keys) if match is None else match
    seed_score = round(match.score, 6)
    score = seed_score if ranking.bm25f is None else round(ranking.bm25f[position].score, 6)
    return Evidence(
        doc_slug=unit.doc_slug,
        title=unit.title,
        category=unit.category,
        snippet="",
        score=score,
        content_hash=unit.content_hash,
        matched_terms=matched_tokens(match, query.tokens),
        source=source,
        header_path=unit.header_path,
        chunk_index=unit.chunk_index,
        chunk_hash=unit.chunk_hash,
        raw_score=match.raw,
        seed_score=None if ranking.bm25f is None else seed_score,
        title_or_keyword_hit=match.title_or_keyword_hit,
        exact_title_phrase=match.exact_title_phrase,
        query_is_keyword=query.phrase in unit.keyword_phrases,
        query_is_title=bool(unit.title_phrase) and query.phrase == unit.title_phrase,
    )


def build_document_index(
    documents: Sequence[Document], lexicon: Lexicon, identifiers: Sequence[Sequence[Identifier]] | None = None,
) -> KeywordIndex:
    """`identifiers`: each document's (`identifiers_of`; read from the content when not given)."""
    if identifiers is None:
        return KeywordIndex.build(prepare_document(d, lexicon) for d in documents)
    return KeywordIndex.build(prepare_document(d, lexicon, i) for d, i in zip(documents, identifiers, strict=True))


def build_chunk_index(
    chunks: Iterable[Chunk],
    lexicon: Lexicon,
    doc_info: Callable[[str], tuple[str, str]],
) -> KeywordIndex:
    """`doc_info(slug)` gives the parent document's (content_hash, summary)."""
    return KeywordIndex.build(prepare_chunk(chunk, lexicon, *doc_info(chunk.doc_slug)) for chunk in chunks)
