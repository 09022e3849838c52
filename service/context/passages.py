"""Full texts for the builder: retrieved results → passages, glossary → concepts.

Results carry snippets; the context wants whole chunks. A chunk result is
looked up by its chunk id (doc_slug, chunk_index) in the in-memory indexes; a
whole-document result (phase 1, or the Tier-1 cache) gets the document's
content, which the builder shortens by whole sentences to the budget. A result
that is not in memory (the corpus was swapped meanwhile) keeps its snippet.

Around a chunk (`context.window_chars`): up to that many characters of the
chunks before and after it on the same page, in document order, cut at whole
sentences and blocks (`sentences.head` / `tail`); a neighbour that is itself
retrieved is not repeated. For a confident answer (`context.full_page_confidence`)
the answered page's passages also carry the whole page, which the builder uses
when it fits the documentation budget.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from service.context.sentences import head, tail
from service.context.types import ConceptText, Passage
from service.domain.types import Chunk, Evidence
from service.ingest.chunker import HEADER_SEPARATOR
from service.ingest.parse import block_tokens
from service.scoring.indexes import CorpusIndexes
from service.scoring.tier1_cache import Concept

MULTI_INTENT = "multi_intent"
"""The decision's reason for an answer that covers several pages (service/decide/seed_rules.py)."""
DEMOTE_LEVELS = 2
"""`##` → `####`: a page's headings go below the context's own `##` sections."""
DEMOTE_UP_TO = 4
"""Deeper headings would pass `######`, Markdown's deepest, and stay as they are."""


def demote_headings(markdown: str) -> str:
    """`## Adding a link` → `#### Adding a link` (headings as the parser sees them, code untouched)."""
    lines = markdown.split("\n")
    for token in reversed(block_tokens(markdown)):
        if token.type != "heading_open" or token.map is None or int(token.tag[1]) > DEMOTE_UP_TO:
            continue
        first, last = token.map
        hashes = "#" * (int(token.tag[1]) + DEMOTE_LEVELS)
        if token.markup.startswith("#"):  # ATX: `## Title` (also inside an outliner bullet)
            at = lines[first].find(token.markup)
            lines[first] = lines[first][:at] + hashes + lines[first][at + len(token.markup) :]
        else:  # setext: the text line(s) and the underline become one ATX heading
            text = " ".join(line.strip() for line in lines[first : last - 1])
            lines[first:last] = [f"{hashes} {text}"]
    return "\n".join(lines)


def without_title(markdown: str) -> str:
    """The page without its leading `# Title` heading (the citation names the title)."""
    tokens = block_tokens(markdown)
    if tokens and tokens[0].type == "heading_open" and tokens[0].tag == "h1" and tokens[0].map is not None:
        return "\n".join(markdown.split("\n")[tokens[0].map[1] :]).lstrip("\n")
    return markdown


def page_text(indexes: CorpusIndexes, slug: str) -> str | None:
    doc = indexes.documents_by_slug.get(slug)
    return None if doc is None else demote_headings(without_title(doc.content))


def _full_text(result: Evidence, indexes: CorpusIndexes | None) -> str:
    if indexes is None:
        return result.snippet
    if result.chunk_index is not None:
        chunk = indexes.chunks_by_id.get((result.doc_slug, result.chunk_index))
        return result.snippet if chunk is None else chunk.content
    return page_text(indexes, result.doc_slug) or result.snippet


def _section_heading(header_path: str) -> str:
    return "#" * (2 + DEMOTE_LEVELS) + " " + header_path.rsplit(HEADER_SEPARATOR, 1)[-1]


def _neighbours(
    indexes: CorpusIndexes, hit: Chunk, step: int, window_chars: int, retrieved: set[tuple[str, int]]
) -> list[Chunk]:
    """Neighbouring chunks (whole, or the part next to the hit) within `window_chars`, hit side first."""
    out: list[Chunk] = []
    left = window_chars
    index = hit.chunk_index + step
    while left > 0 and (hit.doc_slug, index) not in retrieved:
        chunk = indexes.chunks_by_id.get((hit.doc_slug, index))  # same page only: the id holds the slug
        if chunk is None:
            break
        text = chunk.content.strip()
        if len(text) > left:  # the part next to the hit, and the window ends there
            text = tail(text, left) if step < 0 else head(text, left)
            if text:
                out.append(msgspec.structs.replace(chunk, content=text))
            break
        out.append(chunk)
        left -= len(text)
        index += step
    return out


def window_text(hit: Chunk, before: Sequence[Chunk], after: Sequence[Chunk]) -> str:
    """The hit with its neighbours in page order; headings name each part once sections differ."""
    parts = [*reversed(before), hit, *after]
    if all(p.header_path == hit.header_path for p in parts):
        return "\n\n".join(p.content.strip() for p in parts)
    out: list[str] = []
    previous: str | None = None
    for part in parts:
        if part.header_path != previous and part.header_path != part.title:
            out.append(_section_heading(part.header_path))
        out.append(part.content.strip())
        previous = part.header_path
    return "\n\n".join(out)


def passages_of(
    results: Sequence[Evidence],
    indexes: CorpusIndexes | None,
    window_chars: int = 0,
    full_page: str | None = None,
) -> tuple[Passage, ...]:
    """`full_page`: the slug of the page a confident answer names (its passages carry the page)."""
    retrieved = {(r.doc_slug, r.chunk_index) for r in results if r.chunk_index is not None}
    passages: list[Passage] = []
    for r in results:
        window = page = None
        if indexes is not None:
            chunk = None if r.chunk_index is None else indexes.chunks_by_id.get((r.doc_slug, r.chunk_index))
            if chunk is not None and window_chars > 0:
                before = _neighbours(indexes, chunk, -1, window_chars, retrieved)
                after = _neighbours(indexes, chunk, 1, window_chars, retrieved)
                if before or after:
                    window = window_text(chunk, before, after)
            if r.doc_slug == full_page:
                page = page_text(indexes, r.doc_slug)
        passages.append(Passage(
            doc_slug=r.doc_slug, title=r.title, text=_full_text(r, indexes), score=r.score,
            header_path=r.header_path, chunk_index=r.chunk_index, window_text=window, page_text=page,
        ))
    return tuple(passages)


def answered_page(status: str, results: Sequence[Evidence]) -> str | None:
    """The page an answer names: its first result (the decision puts it first)."""
    return results[0].doc_slug if status == "answer" and results else None


def full_page_of(outcome_status: str, confidence: float, reason: str, results: Sequence[Evidence],
                 threshold: float) -> str | None:
    """The answered page when the decision's own confidence reaches `threshold`
    (`context.full_page_confidence`). The confidence is the decision's
    (top − runner-up) / top, so 0.5 means the page scores at least twice the
    next one (1.0: a Tier-1 cache hit, or a question naming a page's title). A
    multi-intent answer names several pages (and asks which to go deeper on):
    none of them is the answer, so none comes whole."""
    if reason == MULTI_INTENT or confidence < threshold:
        return None
    return answered_page(outcome_status, results)


def concepts_of(concepts: Sequence[Concept]) -> tuple[ConceptText, ...]:
    return tuple(ConceptText(term=c.term, text=c.text) for c in concepts)
