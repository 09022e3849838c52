"""Full texts for the builder: retrieved results → passages, glossary → concepts.

Results carry snippets; the context wants whole chunks. A chunk result is
looked up by its chunk id (doc_slug, chunk_index) in the in-memory indexes; a
whole-document result (phase 1, or the Tier-1 cache) gets the document's
content, which the builder shortens by whole sentences to the budget. A result
that is not in memory (the corpus was swapped meanwhile) keeps its snippet.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from service.context.types import ConceptText, Passage
from service.domain.types import Evidence
from service.scoring.glossary import Concept
from service.scoring.indexes import CorpusIndexes

_TITLE_HEADING = re.compile(r"\A\s*#[ \t]+[^\n]*\n+")
_HEADING = re.compile(r"^(#{1,4})(?=[ \t])", re.MULTILINE)


def demote_headings(markdown: str) -> str:
    """`## Adding a link` → `#### Adding a link`: below the context's own `##` sections."""
    return _HEADING.sub(lambda m: m.group(1) + "##", markdown)


def _full_text(result: Evidence, indexes: CorpusIndexes | None) -> str:
    if indexes is None:
        return result.snippet
    if result.chunk_index is not None:
        chunk = indexes.chunks_by_id.get((result.doc_slug, result.chunk_index))
        return result.snippet if chunk is None else chunk.content
    doc = indexes.documents_by_slug.get(result.doc_slug)
    if doc is None:
        return result.snippet
    # The citation names the title; the document's own headings go below the section's.
    return demote_headings(_TITLE_HEADING.sub("", doc.content, count=1))


def passages_of(results: Sequence[Evidence], indexes: CorpusIndexes | None) -> tuple[Passage, ...]:
    return tuple(
        Passage(
            doc_slug=r.doc_slug, title=r.title, text=_full_text(r, indexes), score=r.score,
            header_path=r.header_path, chunk_index=r.chunk_index,
        )
        for r in results
    )


def concepts_of(concepts: Sequence[Concept]) -> tuple[ConceptText, ...]:
    return tuple(ConceptText(term=c.term, text=c.text) for c in concepts)
