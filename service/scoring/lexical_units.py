"""The unit model: a document or a chunk prepared for keyword scoring.

Both phases score "units": a whole document, or a chunk that inherits its
document's title and keywords and whose own headings count as title words.
A unit's identifiers (the names in its code, service/ingest/identifiers.py) are
a field of their own, keyed whole and compact (`identifier_keys`).
A unit keeps what every search reads: match keys per field (the seed
formula's guards); its plain text (snippets) is parsed on demand.  BM25F's term frequencies
travel beside it in `FieldTerms` only until the posting arrays have recorded
them, so the index never holds a dictionary of counts per unit.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from service.domain.identifiers import compact_key, is_separated, suffixes, whole_key
from service.domain.types import Chunk, Document
from service.ingest.identifiers import LINK_TARGET, Identifier, identifiers_of
from service.normalize.lexicon import Lexicon
from service.scoring.snippets import plain_text
from service.scoring.stemming import lexical_key, match_keys


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
    title_phrase: str
    """The page title's key sequence as the corpus's synonyms read it ("Dashboard" is "home"
    under `dashboard: home`): is the whole query the page's name?"""
    title_keys: frozenset[str]
    keyword_keys: frozenset[str]
    keyword_phrases: frozenset[str]
    """Key sequences (space-joined) of each keyword: is the whole query one of them?"""
    content_keys: tuple[str, ...]
    """Sorted, distinct; a tuple is a third of a frozenset's size (seed.py searches it by bisection)."""
    content_token_count: int

    @property
    def plain(self) -> str:
        """The content as a reader sees it, whitespace collapsed: what snippets cut.
        Parsed when a snippet first needs it (cached by content), not at index time."""
        return plain_text(self.content)

    @property
    def plain_lower(self) -> str:
        return self.plain.lower()


@dataclass(frozen=True)
class FieldTerms:
    """BM25F's inputs of one unit: lexical-key term frequencies and token counts per field."""

    title_tf: Mapping[str, int]
    keyword_tf: Mapping[str, int]
    content_tf: Mapping[str, int]
    title_length: int
    keyword_length: int
    content_length: int
    identifier_tf: Mapping[str, int]
    """Each identifier key: times the unit shows a name holding it (at most `MENTIONS_COUNTED` a name)."""
    definition_tf: Mapping[str, int]
    """Each identifier key: names holding it that the unit defines."""


class PreparedUnit(NamedTuple):
    unit: ScoringUnit
    terms: FieldTerms


MENTIONS_COUNTED = 2
"""A name shown more often than this counts no more (a page that repeats a name in every example
is not more about it than one that shows it twice)."""


def prepare_document(doc: Document, lexicon: Lexicon, identifiers: Sequence[Identifier] | None = None) -> PreparedUnit:
    """`identifiers`: the page's (`identifiers_of` its content, read here when not given)."""
    return _prepare(
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
        identifiers=identifiers_of(doc.content, (doc.title,)) if identifiers is None else identifiers,
    )


def prepare_chunk(chunk: Chunk, lexicon: Lexicon, content_hash: str, summary: str = "") -> PreparedUnit:
    """A chunk inherits its document's title and keywords; `content_hash` and
    `summary` are its document's."""
    headings = tuple(h for h in chunk.header_path.split(" > ") if h) if chunk.header_path else ()
    return _prepare(
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
        identifiers=identifiers_of(chunk.content, headings or (chunk.title,), chunk.linked_names),
    )


def _prepare(
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
    identifiers: Sequence[Identifier],
) -> PreparedUnit:
    title_sequences = [match_keys(lexicon.normalise(t)) for t in (title, *headings)]
    # A link's address (a picture's path too) is no word of this page, which keeps the link's
    # text: indexed as words, requests' FAQ ranked for "custom headers" above the page it links to.
    content_tokens = lexicon.normalise(LINK_TARGET.sub("]", content))
    keyword_tokens = [t for phrase in keywords for t in lexicon.normalise(phrase)]
    title_tokens = [t for seq in title_sequences for t in seq]
    unit = ScoringUnit(
        doc_slug=doc_slug,
        title=title,
        category=category,
        content=content,
        content_hash=content_hash,
        summary=summary,
        header_path=header_path,
        chunk_index=chunk_index,
        chunk_hash=chunk_hash,
        title_phrases=tuple(" ".join(seq) for seq in title_sequences if seq),
        title_phrase=" ".join(title_sequences[0]),
        title_keys=frozenset(title_tokens),
        keyword_keys=frozenset(match_keys(keyword_tokens)),
        keyword_phrases=frozenset(" ".join(seq) for k in keywords if (seq := match_keys(lexicon.normalise(k)))),
        content_keys=tuple(sorted(set(match_keys(content_tokens)))),
        content_token_count=len(content_tokens),
    )
    terms = FieldTerms(
        title_tf=_term_counts(title_tokens),
        keyword_tf=_term_counts(keyword_tokens),
        content_tf=_term_counts(content_tokens),
        title_length=len(title_tokens),
        keyword_length=len(keyword_tokens),
        content_length=len(content_tokens),
        **_identifier_terms(identifiers),
    )
    return PreparedUnit(unit, terms)


def identifier_keys(name: str) -> set[str]:
    """The keys a name is found by: its whole form and each dotted suffix's (`flask.views.methodview`,
    `views.methodview`; a key with separators is no word's key) and their compact forms, unstemmed
    (`flaskviewsmethodview`, `methodview`: what `MethodView` and `method_view` share; Snowball would
    make `pytest_addoption` and `PYTEST_ADDOPTS` one key). Its
    parts are words of the unit's text already (the tokeniser splits `_`, `.` and `-`); as keys of
    this field they moved units that show many names above the units about those words."""
    keys: set[str] = set()
    for form in (name, *suffixes(name)):
        whole = whole_key(form)
        if is_separated(whole):
            keys.add(sys.intern(whole))
        if compact := compact_key(form):
            keys.add(sys.intern(compact))  # unstemmed: two names never share a key by their endings
    return keys


def _identifier_terms(identifiers: Sequence[Identifier]) -> dict[str, Any]:
    shown: Counter[str] = Counter()
    defined: Counter[str] = Counter()
    for identifier in identifiers:
        keys = identifier_keys(identifier.name)
        times = min(identifier.count, MENTIONS_COUNTED)
        for key in keys:
            shown[key] += times
            defined[key] += identifier.defined
    return {
        "identifier_tf": dict(shown),
        "definition_tf": {k: v for k, v in defined.items() if v},
    }


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
