"""Keyword scoring of documents (phase 1) and chunks (phase 2) with the seed formula.

Both phases score "units": a whole document, or a chunk that inherits its
document's title and keywords and whose own headings count as title words.
An inverted index keeps the work proportional to the units that share a
query term, not to the corpus size.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from service.domain.types import Chunk, Document, Evidence, Source
from service.normalize.lexicon import Lexicon
from service.normalize.text import match_key
from service.scoring import keyword_formulas as formula

SNIPPET_CHARS = 240


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
    content_keys: frozenset[str]
    content_token_count: int


def _keys(tokens: Iterable[str]) -> list[str]:
    return [match_key(t) for t in tokens]


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
    keyword_keys = {k for phrase in keywords for k in _keys(lexicon.normalise(phrase))}
    return ScoringUnit(
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
        title_keys=frozenset(k for seq in title_sequences for k in seq),
        keyword_keys=frozenset(keyword_keys),
        content_keys=frozenset(_keys(content_tokens)),
        content_token_count=len(content_tokens),
    )


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


def make_snippet(content: str, terms: Sequence[str], fallback: str = "") -> str:
    """A window of the content around the first matched term, cut at word boundaries."""
    text = " ".join(_MARKDOWN_NOISE.sub(" ", content).split())
    lowered = text.lower()
    positions = [m.start() for t in terms if (m := re.search(rf"\b{re.escape(t)}", lowered))]
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
class KeywordIndex:
    """Units plus an inverted index from match key to the units containing it."""

    units: list[ScoringUnit]
    source: Source = "keyword"
    postings: dict[str, set[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        postings: dict[str, set[int]] = defaultdict(set)
        for position, unit in enumerate(self.units):
            for key in unit.title_keys | unit.keyword_keys | unit.content_keys:
                postings[key].add(position)
        self.postings = dict(postings)

    def search(
        self,
        tokens: Sequence[str],
        *,
        category: str | None = None,
        limit: int = 50,
        notes: Sequence[str] = (),
    ) -> list[Evidence]:
        """Score every unit sharing a token; best first (ties broken by slug, index)."""
        keys = _keys(tokens)
        candidates: set[int] = set()
        for key in keys:
            candidates |= self.postings.get(key, set())
        scored: list[Evidence] = []
        for position in candidates:
            unit = self.units[position]
            if category is not None and unit.category != category:
                continue
            scored.append(score_unit(unit, tokens, keys, self.source, notes))
        scored.sort(key=_rank_key)
        return scored[:limit]


def _rank_key(evidence: Evidence) -> tuple[float, str, int]:
    return (-evidence.score, evidence.doc_slug, evidence.chunk_index or 0)


def score_unit(
    unit: ScoringUnit,
    tokens: Sequence[str],
    keys: Sequence[str],
    source: Source = "keyword",
    notes: Sequence[str] = (),
) -> Evidence:
    """Apply the seed formula to one unit and explain every point."""
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
    return Evidence(
        doc_slug=unit.doc_slug,
        title=unit.title,
        category=unit.category,
        snippet=make_snippet(unit.content, matched, unit.summary),
        score=round(final, 6),
        content_hash=unit.content_hash,
        matched_terms=tuple(matched),
        source=source,
        header_path=unit.header_path,
        match_explain=tuple(explain),
        chunk_index=unit.chunk_index,
        chunk_hash=unit.chunk_hash,
        raw_score=raw,
        title_or_keyword_hit=title_hits + keyword_hits > 0,
        exact_title_phrase=exact,
    )


def build_document_index(documents: Iterable[Document], lexicon: Lexicon) -> KeywordIndex:
    return KeywordIndex([unit_from_document(d, lexicon) for d in documents])


def build_chunk_index(
    chunks: Iterable[Chunk],
    lexicon: Lexicon,
    doc_info: Callable[[str], tuple[str, str]],
) -> KeywordIndex:
    """`doc_info(slug)` gives the parent document's (content_hash, summary)."""
    units = []
    for chunk in chunks:
        content_hash, summary = doc_info(chunk.doc_slug)
        units.append(unit_from_chunk(chunk, lexicon, content_hash, summary))
    return KeywordIndex(units)
