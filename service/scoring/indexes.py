"""In-memory keyword indexes of the seeded corpus (phases 1 and 2).

Rebuilt from the corpus snapshot after every seed; scoring reads them
without touching PostgreSQL, so keyword retrieval keeps answering while the
database is away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from service.domain.types import Chunk, Document
from service.normalize.lexicon import Lexicon, Synonyms, build_lexicon
from service.scoring.keyword import KeywordIndex, build_chunk_index, build_document_index

ChunkId = tuple[str, int]


@dataclass(frozen=True)
class CorpusIndexes:
    version: int
    lexicon: Lexicon
    documents: KeywordIndex
    chunks: KeywordIndex
    documents_by_slug: dict[str, Document]
    chunks_by_id: dict[ChunkId, Chunk]
    """Every chunk by its id, (doc_slug, chunk_index): /context's full texts."""

    def doc_info(self, slug: str) -> tuple[str, str]:
        """(content_hash, summary) of a document, for evidence built from a chunk."""
        doc = self.documents_by_slug.get(slug)
        return (doc.content_hash, doc.summary) if doc else ("", "")

    @cached_property
    def _page_lengths(self) -> dict[str, int]:
        # Once per snapshot: phase 3 asks for every candidate page of every query.
        return {slug: len(doc.content.strip()) for slug, doc in self.documents_by_slug.items()}

    @cached_property
    def has_stubs(self) -> bool:
        return any(doc.stub for doc in self.documents_by_slug.values())

    def is_stub(self, slug: str) -> bool:
        """A page with nothing to say on its own (only an include, a directive, links or
        properties; `Document.stub`, marked at seed): never the answer or an option alone."""
        doc = self.documents_by_slug.get(slug)
        return doc is not None and doc.stub

    def page_chars(self, slug: str) -> int:
        """Characters of a page's text (0 for a page this snapshot does not hold)."""
        return self._page_lengths.get(slug, 0)

    def chunk_text(self, key: ChunkId) -> str:
        """A chunk's Markdown ("" for a chunk this snapshot does not hold, e.g. mid-reseed)."""
        chunk = self.chunks_by_id.get(key)
        return chunk.content if chunk else ""

    @property
    def empty(self) -> bool:
        return not self.documents_by_slug


def build_indexes(
    documents: Sequence[Document],
    chunks: Sequence[Chunk],
    synonyms: Synonyms,
    version: int = 0,
    extra_known_terms: Sequence[str] = (),
) -> CorpusIndexes:
    """Known terms and vocabulary first, then the document and chunk indexes."""
    lexicon = build_lexicon(
        titles=[d.title for d in documents],
        keywords=[k for d in documents for k in d.keywords],
        texts=[d.content for d in documents],
        synonyms=synonyms,
        extra_known=extra_known_terms,
    )
    by_slug = {d.slug: d for d in documents}

    def doc_info(slug: str) -> tuple[str, str]:
        doc = by_slug.get(slug)
        return (doc.content_hash, doc.summary) if doc else ("", "")

    return CorpusIndexes(
        version=version,
        lexicon=lexicon,
        documents=build_document_index(documents, lexicon),
        chunks=build_chunk_index(chunks, lexicon, doc_info),
        documents_by_slug=by_slug,
        chunks_by_id={(c.doc_slug, c.chunk_index): c for c in chunks},
    )
