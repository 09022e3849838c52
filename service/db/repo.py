"""Read side of the corpus: SQL in, domain types out."""

from __future__ import annotations

import hashlib
from typing import Any

import asyncpg

from service.domain.types import Base, Chunk, Document


class CorpusCounts(Base, frozen=True):
    documents: int
    chunks: int
    migration_version: int


async def load_documents(pool: asyncpg.Pool[Any]) -> list[Document]:
    rows = await pool.fetch(
        "select slug, category, title, summary, content, keywords, content_hash, version, stub"
        " from docs_knowledge order by slug"
    )
    return [
        Document(
            slug=r["slug"], category=r["category"], title=r["title"], summary=r["summary"],
            content=r["content"], keywords=tuple(r["keywords"]),
            content_hash=r["content_hash"], version=r["version"], stub=r["stub"],
        )
        for r in rows
    ]


async def load_chunks(pool: asyncpg.Pool[Any]) -> list[Chunk]:
    rows = await pool.fetch(
        "select doc_slug, category, title, header_path, chunk_index, content, keywords,"
        " chunk_hash, token_count, anchor, linked_names from docs_knowledge_chunks order by doc_slug, chunk_index"
    )
    return [
        Chunk(
            doc_slug=r["doc_slug"], category=r["category"], title=r["title"],
            header_path=r["header_path"], chunk_index=r["chunk_index"], content=r["content"],
            keywords=tuple(r["keywords"]), chunk_hash=r["chunk_hash"],
            token_count=r["token_count"], anchor=r["anchor"], linked_names=tuple(r["linked_names"]),
        )
        for r in rows
    ]


async def corpus_counts(pool: asyncpg.Pool[Any]) -> CorpusCounts:
    """One round trip for /ready: also proves the database answers."""
    row = await pool.fetchrow(
        "select (select count(*) from docs_knowledge) as documents,"
        " (select count(*) from docs_knowledge_chunks) as chunks,"
        " (select coalesce(max(version), 0) from schema_migrations) as migration_version"
    )
    assert row is not None  # a select without FROM always yields one row
    return CorpusCounts(
        documents=row["documents"], chunks=row["chunks"],
        migration_version=row["migration_version"],
    )


async def corpus_fingerprint(pool: asyncpg.Pool[Any]) -> str:
    """sha256 over every document's and chunk's identity, hash and version.

    Equal fingerprints mean the stored corpus did not change (used by tests
    that throw hostile input at the service).
    """
    digest = hashlib.sha256()
    for r in await pool.fetch(
        "select slug, content_hash, version from docs_knowledge order by slug"
    ):
        digest.update(f"d|{r['slug']}|{r['content_hash']}|{r['version']}\n".encode())
    for r in await pool.fetch(
        "select doc_slug, chunk_index, chunk_hash from docs_knowledge_chunks"
        " order by doc_slug, chunk_index"
    ):
        digest.update(f"c|{r['doc_slug']}|{r['chunk_index']}|{r['chunk_hash']}\n".encode())
    return digest.hexdigest()
