"""Dialect corpora seeded into PostgreSQL (issue 33): stub pages stored, loaded back and
kept unchanged by a re-seed; generator anchors stored on the chunks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg

from service.db.repo import load_chunks, load_documents
from service.ingest.chunker import chunk_document
from service.ingest.markdown import CorpusRules
from service.ingest.seeder import SeedOptions, seed
from service.normalize.lexicon import Synonyms
from service.scoring.indexes import build_indexes

VITE = Path(__file__).resolve().parents[1] / "corpora" / "vite-docs"


async def test_vite_docs_seed_stores_stubs_and_vitepress_anchors(migrated_pool: asyncpg.Pool[Any]) -> None:
    options = SeedOptions(CorpusRules(dialect="vitepress"))
    first = await seed(migrated_pool, VITE, chunk_document, options)
    assert first.documents.inserted == 45 and first.broken_links == ()
    assert first.parse_ms_per_page > 0
    documents = await load_documents(migrated_pool)
    assert sorted(d.slug for d in documents if d.stub) == ["blog", "index", "live"]
    chunks = await load_chunks(migrated_pool)
    anchors = {(c.doc_slug, c.anchor) for c in chunks}
    assert ("config/server-options", "server-host") in anchors
    indexes = build_indexes(documents, chunks, Synonyms())
    assert indexes.is_stub("index") and not indexes.is_stub("config/server-options")
    assert not indexes.is_stub("no/such/page")
    again = await seed(migrated_pool, VITE, chunk_document, options)
    assert again.documents.unchanged == 45 and not again.changed
    # A stored mark that differs from today's reading (an older reader's) is updated
    # although the text is the same.
    await migrated_pool.execute("update docs_knowledge set stub = false where slug = 'blog'")
    healed = await seed(migrated_pool, VITE, chunk_document, options)
    assert healed.documents.updated == 1
    assert {d.slug for d in await load_documents(migrated_pool) if d.stub} == {"blog", "index", "live"}
