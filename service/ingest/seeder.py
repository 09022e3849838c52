"""Idempotent seeding: `seeds/` → `docs_knowledge` + `docs_knowledge_chunks`.

1. Parse every file and chunk every document *before* touching the database:
   one bad file fails the seed and nothing is written.
2. One transaction (serialised by a transaction-level advisory lock) that
   inserts new documents, updates changed ones (content_hash differs; version
   bumped), leaves unchanged rows alone (no UPDATE, so updated_at stays),
   deletes documents whose file is gone, then does the same for chunks keyed
   by (doc_slug, chunk_index). A seed killed half-way leaves the previous
   corpus intact, because the transaction never commits.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import asyncpg

from service.domain.types import Base, Chunk, Document
from service.flags import Flags
from service.ingest.linked_names import with_linked_names
from service.ingest.links import CorpusLinks, LinkCheck, judge_links
from service.ingest.markdown import (
    CorpusRules,
    SeedError,
    SeedFileError,
    ignored_files,
    parse_corpus,
)

log = logging.getLogger(__name__)

Chunker = Callable[[Document], list[Chunk]]
if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

    Conn = asyncpg.Connection[Any] | PoolConnectionProxy[Any]
# Arbitrary but fixed: identifies "seeding" among advisory locks.
SEED_LOCK_KEY = 0x5EED_0002


class SeedCounts(Base, frozen=True):
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0


class SeedReport(Base, frozen=True):
    documents: SeedCounts
    chunks: SeedCounts
    broken_links: tuple[str, ...] = ()
    """`file:line: broken link ...` for each internal link that reaches nothing (flag `warn`)."""
    unverifiable_anchors: tuple[str, ...] = ()
    """Each anchor missing from a page its build partly writes (an include, a directive, a
    shortcode), once, with how many links point at it: not broken, not verifiable here."""
    external_links: int = 0
    """Links that leave the corpus on purpose (intersphinx targets, `?q=` site search, addresses
    into other parts of the site: `/blog/…` beside `/docs/…`)."""
    excluded_links: int = 0
    """Links into files `seeding.ignore` leaves out."""
    unwritten_pages: int = 0
    """Wikilinks of a Logseq graph to pages nobody wrote (Logseq makes a page of every `[[name]]`)."""
    prepare_seconds: float = 0.0
    """Parsing, link check and chunking (before the transaction)."""
    parse_ms_per_page: float = 0.0
    """Reading and parsing the pages (dialect included), per page kept."""
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        d, c = self.documents, self.chunks
        return bool(d.inserted or d.updated or d.deleted or c.inserted or c.updated or c.deleted)


def default_chunker(max_tokens: int = 450) -> Chunker:
    """The heading-aware chunker of `service.ingest.chunker`."""
    module = importlib.import_module("service.ingest.chunker")
    chunk_document: Callable[..., list[Chunk]] = module.chunk_document

    def chunker(doc: Document) -> list[Chunk]:
        return chunk_document(doc, max_tokens=max_tokens)

    return chunker


def _chunk_row(c: Chunk) -> tuple[Any, ...]:
    """Every stored column of a chunk, in comparison order."""
    return (c.category, c.title, c.header_path, c.content, list(c.keywords), c.chunk_hash,
            c.token_count, c.anchor, list(c.linked_names))


@dataclass(frozen=True, slots=True)
class SeedOptions:
    """The `seeding:` flags."""

    rules: CorpusRules = field(default_factory=CorpusRules)
    broken_links: Literal["warn", "fail"] = "warn"

    @classmethod
    def from_flags(cls, flags: Flags) -> SeedOptions:
        s = flags.seeding
        return cls(CorpusRules(default_category=s.default_category, ignore=s.ignore, dialect=s.dialect),
                   s.broken_links)


def prepare(seeds_dir: Path, chunker: Chunker, options: SeedOptions) -> tuple[list[Document], list[Chunk], list[str]]:
    """Parse, link-check and chunk everything; raises SeedError before any write."""
    documents, chunks, links, _ = _prepare(seeds_dir, chunker, options)
    return documents, chunks, [str(b) for b in links.broken]


def _prepare(
    seeds_dir: Path, chunker: Chunker, options: SeedOptions
) -> tuple[list[Document], list[Chunk], LinkCheck, float]:
    """`prepare`, with every link judged, and the parse time per page in milliseconds."""
    started = time.perf_counter()
    corpus = parse_corpus(seeds_dir, options.rules)
    parse_ms = (time.perf_counter() - started) * 1000 / max(len(corpus), 1)
    known = CorpusLinks(corpus, seeds_dir, ignored_files(seeds_dir, options.rules))
    links = judge_links(corpus, known)
    broken = links.broken
    if broken and options.broken_links == "fail":
        raise SeedError([SeedFileError(b.path, f"line {b.line}: broken link {b.target!r}: {b.reason}")
                         for b in broken])
    if broken:
        log.warning("seed: %d broken internal link(s), e.g. %s", len(broken), "; ".join(map(str, broken[:5])))
    if links.unverifiable:
        log.info("seed: %d anchor(s) not verifiable (the build writes part of their page), e.g. %s",
                 len(links.unverifiable), "; ".join(map(str, links.unverifiable[:5])))
    if links.external or links.excluded or links.unwritten:
        log.info("seed: not broken: %d link(s) leaving the corpus (intersphinx, site search, other parts of the"
                 " site), %d into files"
                 " seeding.ignore leaves out, %d to pages Logseq makes for a [[name]]", links.external,
                 links.excluded, links.unwritten)
    documents = [entry.doc for entry in corpus]
    chunks = with_linked_names(corpus, [chunk for doc in documents for chunk in chunker(doc)], known)
    return documents, chunks, links, parse_ms


async def seed(
    pool: asyncpg.Pool[Any], seeds_dir: Path, chunker: Chunker, options: SeedOptions | None = None
) -> SeedReport:
    """Bring the database in line with `seeds_dir`; see the module docstring."""
    started = time.perf_counter()
    documents, chunks, links, parse_ms = _prepare(seeds_dir, chunker, options or SeedOptions())
    prepared = time.perf_counter()
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("select pg_advisory_xact_lock($1)", SEED_LOCK_KEY)
        doc_counts, orphaned = await _sync_documents(conn, documents)
        chunk_counts = await _sync_chunks(conn, chunks, already_deleted=orphaned)
    report = SeedReport(
        documents=doc_counts, chunks=chunk_counts, broken_links=tuple(str(b) for b in links.broken),
        unverifiable_anchors=tuple(str(a) for a in links.unverifiable), external_links=links.external,
        excluded_links=links.excluded, unwritten_pages=links.unwritten,
        prepare_seconds=round(prepared - started, 3), parse_ms_per_page=round(parse_ms, 2),
        seconds=round(time.perf_counter() - started, 3),
    )
    log.info("seed finished in %.2f s (parse+chunk %.2f s, parse %.2f ms/page): documents %s, chunks %s,"
             " %d broken link(s), %d unverifiable anchor(s), %d external, %d excluded", report.seconds,
             report.prepare_seconds, report.parse_ms_per_page, report.documents, report.chunks,
             len(links.broken), len(links.unverifiable), links.external, links.excluded)
    return report


async def _sync_documents(
    conn: Conn, docs: Sequence[Document]
) -> tuple[SeedCounts, int]:
    """Returns the counts and how many chunks went with deleted documents."""
    # The stub mark is compared too: a better reading of a dialect changes it, not the text.
    stored = {
        r["slug"]: (r["content_hash"], r["stub"])
        for r in await conn.fetch("select slug, content_hash, stub from docs_knowledge")
    }
    new = [d for d in docs if d.slug not in stored]
    changed = [d for d in docs if d.slug in stored and stored[d.slug] != (d.content_hash, d.stub)]
    gone = sorted(set(stored) - {d.slug for d in docs})
    if new:
        await conn.executemany(
            """insert into docs_knowledge
                   (slug, category, title, summary, content, keywords, content_hash, stub)
               values ($1, $2, $3, $4, $5, $6, $7, $8)""",
            [(d.slug, d.category, d.title, d.summary, d.content, list(d.keywords),
              d.content_hash, d.stub) for d in new],
        )
    if changed:
        await conn.executemany(
            """update docs_knowledge
                  set category = $2, title = $3, summary = $4, content = $5, keywords = $6,
                      content_hash = $7, stub = $8, version = version + 1, updated_at = now()
                where slug = $1""",
            [(d.slug, d.category, d.title, d.summary, d.content, list(d.keywords),
              d.content_hash, d.stub) for d in changed],
        )
    orphaned = 0
    if gone:
        # Delete the chunks explicitly (the FK would cascade) so they can be counted.
        orphaned = len(await conn.fetch(
            "delete from docs_knowledge_chunks where doc_slug = any($1::text[]) returning 1", gone
        ))
        await conn.execute("delete from docs_knowledge where slug = any($1::text[])", gone)
    counts = SeedCounts(
        inserted=len(new), updated=len(changed), deleted=len(gone),
        unchanged=len(docs) - len(new) - len(changed),
    )
    return counts, orphaned


async def _sync_chunks(
    conn: Conn, chunks: Sequence[Chunk], *, already_deleted: int
) -> SeedCounts:
    stored = {
        (r["doc_slug"], r["chunk_index"]): (
            r["category"], r["title"], r["header_path"], r["content"], list(r["keywords"]),
            r["chunk_hash"], r["token_count"], r["anchor"], list(r["linked_names"]),
        )
        for r in await conn.fetch(
            "select doc_slug, chunk_index, category, title, header_path, content, keywords,"
            " chunk_hash, token_count, anchor, linked_names from docs_knowledge_chunks"
        )
    }
    wanted = {(c.doc_slug, c.chunk_index): c for c in chunks}
    new = [c for key, c in wanted.items() if key not in stored]
    # Compare every column, not only chunk_hash: a renamed heading or new
    # document keywords change the row while the chunk text stays the same.
    changed = [c for key, c in wanted.items() if key in stored and stored[key] != _chunk_row(c)]
    stale = [key for key in stored if key not in wanted]
    if stale:
        await conn.execute(
            """delete from docs_knowledge_chunks c
                using unnest($1::text[], $2::int[]) as s(doc_slug, chunk_index)
                where c.doc_slug = s.doc_slug and c.chunk_index = s.chunk_index""",
            [k[0] for k in stale], [k[1] for k in stale],
        )
    if new or changed:
        await conn.executemany(
            """insert into docs_knowledge_chunks
                   (doc_slug, chunk_index, category, title, header_path, content, keywords,
                    chunk_hash, token_count, anchor, linked_names)
               values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
               on conflict (doc_slug, chunk_index) do update
                  set category = excluded.category, title = excluded.title,
                      header_path = excluded.header_path, content = excluded.content,
                      keywords = excluded.keywords, chunk_hash = excluded.chunk_hash,
                      token_count = excluded.token_count, anchor = excluded.anchor,
                      linked_names = excluded.linked_names, updated_at = now()""",
            [(c.doc_slug, c.chunk_index, *_chunk_row(c)) for c in [*new, *changed]],
        )
    return SeedCounts(
        inserted=len(new), updated=len(changed), deleted=len(stale) + already_deleted,
        unchanged=len(wanted) - len(new) - len(changed),
    )
