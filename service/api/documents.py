"""Pages on demand: `GET /documents` and `GET /documents/{slug}` from the loaded corpus.

The category set is the loaded corpus's own (whatever folders or front matter
the documentation set uses); request validation everywhere reads it from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated

from litestar import get
from litestar.datastructures import State
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import FromPath, QueryParameter

from service.api.errors import client_errors
from service.domain.types import Base, Chunk, Document
from service.ingest.chunker import HEADER_SEPARATOR
from service.state import AppState, get_state


class SectionOut(Base, frozen=True):
    """One heading of the page: its title, URL fragment and sub-sections."""

    title: str
    anchor: str
    sections: list[SectionOut]


class DocumentOut(Base, frozen=True):
    slug: str
    title: str
    category: str
    summary: str
    sections: list[SectionOut]
    stub: bool
    """Nothing to say on its own (only an include, a directive, links or properties):
    listed for its links, never the answer on its own."""


class DocumentList(Base, frozen=True):
    documents: list[DocumentOut]
    categories: list[str]
    """Every category of the loaded corpus (what `category` filters accept)."""


class DocumentPage(DocumentOut, frozen=True):
    content: str
    keywords: list[str]
    content_hash: str


def corpus_categories(st: AppState) -> list[str]:
    """The loaded corpus's categories, sorted ([] before a corpus is loaded)."""
    documents = st.corpus.documents
    cached = _CATEGORIES.get(id(documents))
    if cached is None or cached[0] is not documents:
        # Once per loaded corpus, not per request (the snapshot's tuple is its identity).
        cached = (documents, sorted({d.category for d in documents}))
        _CATEGORIES.clear()
        _CATEGORIES[id(documents)] = cached
    return list(cached[1])


_CATEGORIES: dict[int, tuple[tuple[Document, ...], list[str]]] = {}


def check_category(category: str | None, categories: Sequence[str]) -> None:
    """400 naming the valid categories when `category` is not one of the corpus's."""
    if category is not None and categories and category not in categories:
        message = f"unknown category {category!r}; valid categories: {', '.join(categories)}"
        raise ValidationException(message, extra=[{"field": "category", "message": message}])


@dataclass
class _Node:
    anchor: str = ""
    children: dict[str, _Node] = field(default_factory=dict)

    def out(self) -> list[SectionOut]:
        return [SectionOut(title=t, anchor=n.anchor, sections=n.out()) for t, n in self.children.items()]


def section_tree(title: str, chunks: Sequence[Chunk]) -> list[SectionOut]:
    """Headings under the page title, nested by header path, in page order."""
    root = _Node()
    for chunk in chunks:
        crumbs = chunk.header_path.split(HEADER_SEPARATOR)
        if crumbs and crumbs[0] == title:
            crumbs = crumbs[1:]
        node = root
        for crumb in crumbs:
            node = node.children.setdefault(crumb, _Node())
        if crumbs and not node.anchor:
            node.anchor = chunk.anchor
    return root.out()


def _chunks_by_doc(chunks: Sequence[Chunk]) -> dict[str, list[Chunk]]:
    grouped: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        grouped.setdefault(chunk.doc_slug, []).append(chunk)
    return grouped


def _out(doc: Document, chunks: Sequence[Chunk]) -> DocumentOut:
    return DocumentOut(slug=doc.slug, title=doc.title, category=doc.category, summary=doc.summary,
                       sections=section_tree(doc.title, chunks), stub=doc.stub)


@get("/documents", summary="Every page of the loaded corpus, with its section tree",
     responses=client_errors(400))
async def list_documents(
    state: State,
    category: Annotated[str | None, QueryParameter(
        max_length=64,
        description="only pages of this category (one of `categories`; unknown → 400 naming the valid ones)",
    )] = None,
) -> DocumentList:
    st = get_state(state)
    categories = corpus_categories(st)
    check_category(category, categories)
    grouped = _chunks_by_doc(st.corpus.chunks)
    documents = [_out(d, grouped.get(d.slug, [])) for d in st.corpus.documents
                 if category is None or d.category == category]
    return DocumentList(documents=documents, categories=categories)


@get("/documents/{slug:path}", summary="One page: its text, keywords and section tree",
     responses=client_errors(404))
async def get_document(state: State, slug: FromPath[str]) -> DocumentPage:
    st = get_state(state)
    slug = slug.strip("/")
    doc = next((d for d in st.corpus.documents if d.slug == slug), None)
    if doc is None:
        raise NotFoundException(f"no document with slug {slug!r}")
    out = _out(doc, [c for c in st.corpus.chunks if c.doc_slug == slug])
    return DocumentPage(slug=out.slug, title=out.title, category=out.category, summary=out.summary,
                        sections=out.sections, content=doc.content, keywords=list(doc.keywords),
                        content_hash=doc.content_hash, stub=doc.stub)


ROUTES: list[object] = [list_documents, get_document]
