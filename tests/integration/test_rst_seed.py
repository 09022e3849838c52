"""The vendored Sphinx documentation (tests/corpora/requests-docs) seeded into a real
PostgreSQL: the seed report holds exactly the expected pages, their chunks open at the
pages' Sphinx anchors, and a second seed changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg

from service.db import repo
from service.ingest.chunker import chunk_document
from service.ingest.seeder import SeedCounts, seed

CORPORA = Path(__file__).resolve().parents[1] / "corpora"


async def test_requests_docs_seed(migrated_pool: asyncpg.Pool[Any]) -> None:
    root = CORPORA / "requests-docs"
    expected = {line.strip() for line in (CORPORA / "requests-docs.expected-pages.txt")
                .read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")}
    report = await seed(migrated_pool, root, chunk_document)
    assert report.documents == SeedCounts(inserted=len(expected))
    assert len(report.broken_links) == 3 and all("tut-files" in b for b in report.broken_links)
    docs = {d.slug: d for d in await repo.load_documents(migrated_pool)}
    assert set(docs) == expected
    assert docs["user/quickstart"].title == "Quickstart"
    anchors = {r["anchor"] for r in await migrated_pool.fetch(
        "select anchor from docs_knowledge_chunks where doc_slug = 'user/quickstart'")}
    assert {"id1", "make-a-request", "id2", "passing-parameters-in-urls"} <= anchors
    again = await seed(migrated_pool, root, chunk_document)
    assert again.documents == SeedCounts(unchanged=len(expected)) and not again.changed
