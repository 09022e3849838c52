"""What the pipeline calls: the matching curations applied to a tier's decision."""

from __future__ import annotations

from collections.abc import Sequence

from service.curation.rules import Curation, apply, matching
from service.curation.store import CurationStore
from service.domain.types import Chunk, Decision, Document, Evidence, NormalizedQuery

CURATOR_KEY = "curator"
SNIPPET_CHARS = 200


class Curator:
    def __init__(self, store: CurationStore) -> None:
        self.store = store
        self._documents: dict[str, Document] = {}
        self._sections: dict[tuple[str, str], Chunk] = {}

    def load_corpus(self, documents: Sequence[Document], chunks: Sequence[Chunk]) -> None:
        """Pages and sections a pin can name (rebuilt after every corpus reload)."""
        self._documents = {d.slug: d for d in documents}
        sections: dict[tuple[str, str], Chunk] = {}
        for chunk in chunks:
            sections.setdefault((chunk.doc_slug, chunk.header_path), chunk)
        self._sections = sections

    def has_page(self, slug: str) -> bool:
        return slug in self._documents

    def has_section(self, slug: str, header_path: str) -> bool:
        return (slug, header_path) in self._sections

    def stale_reason(self, cur: Curation) -> str | None:
        """Why a curation no longer applies (its page or section left the corpus), or None."""
        if not self._documents:
            return None  # no corpus loaded yet: nothing to judge against
        if cur.doc_slug not in self._documents:
            return f"page {cur.doc_slug} is no longer in the corpus"
        if cur.action == "pin" and cur.header_path and (cur.doc_slug, cur.header_path) not in self._sections:
            return f"section {cur.header_path!r} is no longer in {cur.doc_slug}"
        return None

    def evidence_for(self, slug: str, header_path: str | None, score: float) -> Evidence | None:
        doc = self._documents.get(slug)
        if doc is None:
            return None
        if header_path:
            chunk = self._sections.get((slug, header_path))
            if chunk is None:
                return None
            return Evidence(doc_slug=slug, title=doc.title, category=doc.category,
                            snippet=chunk.content[:SNIPPET_CHARS], score=score, content_hash=doc.content_hash,
                            matched_terms=(), source="keyword", header_path=header_path,
                            chunk_index=chunk.chunk_index, chunk_hash=chunk.chunk_hash)
        return Evidence(doc_slug=slug, title=doc.title, category=doc.category,
                        snippet=(doc.summary or doc.content)[:SNIPPET_CHARS], score=score,
                        content_hash=doc.content_hash, matched_terms=(), source="keyword")

    def __call__(self, query: NormalizedQuery, decision: Decision) -> tuple[Decision, list[str]]:
        """The decision after curation, and one provenance line per curation that changed it."""
        active = self.store.active
        if not active:
            return decision, []
        found = matching(active, query.phrase)
        if not found:
            return decision, []
        after, applied = apply(decision, found, self.evidence_for)
        return after, [c.describe() for c in applied]
