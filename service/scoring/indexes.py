"""In-memory keyword indexes of the seeded corpus (phases 1 and 2).

Rebuilt from the corpus snapshot after every seed; scoring reads them
without touching PostgreSQL, so keyword retrieval keeps answering while the
database is away.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from service.domain.identifiers import compact_key, suffixes, whole_key
from service.domain.types import Chunk, Document
from service.ingest.identifiers import Identifier, identifiers_of
from service.normalize.lexicon import Lexicon, Synonyms, build_lexicon
from service.scoring.keyword import KeywordIndex, build_chunk_index, build_document_index
from service.scoring.stemming import lexical_key

ChunkId = tuple[str, int]

PageType = Literal["release_notes", "migration_guide"]
"""What a page is by its structure or its title (a page of no special type has none)."""

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
RELEASE_HEADING = re.compile(
    r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?![\w.])"  # 1.6, 0.10.15, v2.1.0
    r"|\b\d{4}-\d{2}-\d{2}\b"  # 2024-04-20
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"  # Dec 1st, 2025
    rf"|\b\d{{1,2}}\s+{_MONTH}\s+\d{{4}}\b"  # 1 December 2025
    r"|\bunreleased\b",
    re.IGNORECASE,
)
"""A heading that names a release: a version number, a date, or Keep a Changelog's "Unreleased"."""
RELEASE_MIN_HEADINGS = 3
"""Release headings a page needs at one heading depth (besides being half of that depth's)."""
MIGRATION_TITLE = re.compile(r"\b(?:migrat|upgrad)\w*", re.IGNORECASE)
"""A migration or upgrade guide's title, in general English: "Migrating from Vuex ≤4", "Migration
from v7", "Upgrading to v2", "Migrating from Vim"."""
MIGRATION_SUBJECT_MAX_SHARE = 0.25
"""A guide's title word names its subject (what a question naming it is about: Vuex, OneNote, Vim)
only when fewer than this share of the corpus's pages hold it: "Migrating to Modern Redux" is not
about every question that says "redux" (84 of Redux's 85 pages; Logseq's "logseq", 102 of 238).
The labelled sets rank the same from 0.25 to 0.34 and without it; Redux's "redux configureStore"
got the RTK 2.0 guide without it (docs/quality/page-priors.md)."""
NAME_PIN_MAX_PAGES = 3
"""A name from the code that at most this many pages show pins its pages down (`pinned_pages`):
`request.url_for` or `storesDirs` is on one to three pages, `TypeScript` or `mkdocs.yml` on many.
Chosen leave-one-corpus-out on the twelve labelled sets' dev splits (1, 2, 3, 5 pages tried;
docs/quality/cross-corpus.md)."""


def release_notes_pages(chunks: Iterable[Chunk]) -> frozenset[str]:
    """Pages whose sections are releases: at some heading depth, at least
    `RELEASE_MIN_HEADINGS` distinct headings name a version or a date and they are at least half
    of that depth's headings (a changelog, release notes). Read from the chunks' header paths, so
    every dialect the chunker understands counts alike (Markdown, reStructuredText, an outliner's
    heading blocks); a page that names a version here and there is not one."""
    sections: dict[str, set[tuple[str, ...]]] = {}
    for chunk in chunks:
        path = tuple(part.strip() for part in chunk.header_path.split(" > ") if part.strip())
        known = sections.setdefault(chunk.doc_slug, set())
        known.update(path[: depth + 1] for depth in range(len(path)))
    found: set[str] = set()
    for slug, headings in sections.items():
        per_depth: Counter[int] = Counter()
        releases: Counter[int] = Counter()
        for heading in headings:
            per_depth[len(heading)] += 1
            releases[len(heading)] += RELEASE_HEADING.search(heading[-1]) is not None
        if any(n >= RELEASE_MIN_HEADINGS and 2 * n >= per_depth[depth] for depth, n in releases.items()):
            found.add(slug)
    return frozenset(found)


@dataclass(frozen=True)
class CorpusIndexes:
    version: int
    lexicon: Lexicon
    documents: KeywordIndex
    chunks: KeywordIndex
    documents_by_slug: dict[str, Document]
    chunks_by_id: dict[ChunkId, Chunk]
    """Every chunk by its id, (doc_slug, chunk_index): /context's full texts."""
    pages_by_name: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Each name's whole and compact key (`request.url_for`, `requesturlfor`) → the pages that show
    a name of that key (`page_names`: in code, inline code, headings, links)."""

    def pinned_pages(self, names: Iterable[str]) -> frozenset[str]:
        """The pages the query's names pin down: for each name at most `NAME_PIN_MAX_PAGES` pages
        show (whole, else compact: `url_for` is `urlFor`), those pages."""
        pinned: set[str] = set()
        for name in names:
            pages = self.pages_by_name.get(whole_key(name)) or self.pages_by_name.get(compact_key(name)) or frozenset()
            if len(pages) <= NAME_PIN_MAX_PAGES:
                pinned |= pages
        return frozenset(pinned)

    def doc_info(self, slug: str) -> tuple[str, str]:
        """(content_hash, summary) of a document, for evidence built from a chunk."""
        doc = self.documents_by_slug.get(slug)
        return (doc.content_hash, doc.summary) if doc else ("", "")

    @cached_property
    def _release_notes(self) -> frozenset[str]:
        # Once per snapshot, from structure only (no page's name or path).
        return release_notes_pages(self.chunks_by_id.values())

    @cached_property
    def _migration_guides(self) -> dict[str, frozenset[str]]:
        """Each migration guide's subject: its title's words (lexical keys) but those on
        `MIGRATION_SUBJECT_MAX_SHARE` of the pages or more (the product every page names)."""
        common = MIGRATION_SUBJECT_MAX_SHARE * len(self.documents_by_slug)
        return {slug: frozenset(k for t in self.lexicon.normalise(doc.title)
                                if self.documents.postings.document_frequency(k := lexical_key(t)) < common)
                for slug, doc in self.documents_by_slug.items() if MIGRATION_TITLE.search(doc.title)}

    def migration_subject(self, slug: str) -> frozenset[str]:
        """A migration guide's subject words (`_migration_guides`: on Pinia's docs "Migrating from
        Vuex ≤4" → vuex, "migrat" and "4" being on a third of its pages); empty for any other page."""
        return self._migration_guides.get(slug, frozenset())

    def page_type(self, slug: str) -> PageType | None:
        """The page's type: release notes by their structure (`release_notes_pages`), a migration
        guide by its title (`MIGRATION_TITLE`); None for an ordinary page."""
        if slug in self._release_notes:
            return "release_notes"
        return "migration_guide" if slug in self._migration_guides else None

    @property
    def has_release_notes(self) -> bool:
        return bool(self._release_notes)

    @property
    def has_migration_guides(self) -> bool:
        return bool(self._migration_guides)

    def is_stub(self, slug: str) -> bool:
        """A page with nothing to say on its own (only an include, a directive, links or
        properties; `Document.stub`, marked at seed): never named by its title alone."""
        doc = self.documents_by_slug.get(slug)
        return doc is not None and doc.stub

    def chunk_text(self, key: ChunkId) -> str:
        """A chunk's Markdown ("" for a chunk this snapshot does not hold, e.g. mid-reseed)."""
        chunk = self.chunks_by_id.get(key)
        return chunk.content if chunk else ""

    @property
    def empty(self) -> bool:
        return not self.documents_by_slug


def identifier_index(names: Iterable[str]) -> dict[str, str]:
    """Each name's whole and compact keys, and its dotted suffixes' (`Lexicon.identifiers`), to
    the name as first written."""
    index: dict[str, str] = {}
    for name in names:
        for form in (name, *suffixes(name)):
            index.setdefault(whole_key(form), form)
            index.setdefault(compact_key(form), form)
    return index


def pages_by_name(documents: Sequence[Document], names: Sequence[tuple[Identifier, ...]]) -> dict[str, frozenset[str]]:
    """`CorpusIndexes.pages_by_name` from each page's names (`page_names`, in `documents`' order)."""
    pages: dict[str, set[str]] = {}
    for doc, shown in zip(documents, names, strict=True):
        for item in shown:
            for key in (whole_key(item.name), compact_key(item.name)):
                pages.setdefault(key, set()).add(doc.slug)
    return {key: frozenset(slugs) for key, slugs in pages.items()}


def page_names(documents: Sequence[Document], chunks: Sequence[Chunk]) -> list[tuple[Identifier, ...]]:
    """Each page's names, in `documents`' order, as the document index reads them: those its
    text and title show and define, and those other pages' links point at its sections by."""
    linked: dict[str, list[str]] = {}
    for chunk in chunks:
        linked.setdefault(chunk.doc_slug, []).extend(chunk.linked_names)
    return [identifiers_of(d.content, (d.title,), dict.fromkeys(linked.get(d.slug, ()))) for d in documents]


def build_indexes(
    documents: Sequence[Document],
    chunks: Sequence[Chunk],
    synonyms: Synonyms,
    version: int = 0,
    extra_known_terms: Sequence[str] = (),
) -> CorpusIndexes:
    """Known terms, vocabulary and names first, then the document and chunk indexes."""
    names = page_names(documents, chunks)
    lexicon = build_lexicon(
        titles=[d.title for d in documents],
        keywords=[k for d in documents for k in d.keywords],
        texts=[d.content for d in documents],
        synonyms=synonyms,
        extra_known=extra_known_terms,
        identifiers=identifier_index(i.name for shown in names for i in shown),
    )
    by_slug = {d.slug: d for d in documents}

    def doc_info(slug: str) -> tuple[str, str]:
        doc = by_slug.get(slug)
        return (doc.content_hash, doc.summary) if doc else ("", "")

    return CorpusIndexes(
        version=version,
        lexicon=lexicon,
        documents=build_document_index(documents, lexicon, names),
        chunks=build_chunk_index(chunks, lexicon, doc_info),
        documents_by_slug=by_slug,
        chunks_by_id={(c.doc_slug, c.chunk_index): c for c in chunks},
        pages_by_name=pages_by_name(documents, names),
    )
