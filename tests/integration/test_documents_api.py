"""Pages on demand, the corpus's own categories, anchors in evidence, link check
at seed, and Logseq's documentation served as `SEEDS_DIR` (issue 17)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from service.db.embedded import free_port
from service.ingest.chunker import chunk_document
from service.ingest.markdown import SeedError
from service.ingest.seeder import SeedOptions, seed
from tests.conftest import LOGSEQ_DOCS
from tests.serve_process import start_serve, stop, wait_ready

SEED_CATEGORIES = ["actions", "concepts", "widgets"]


# --- GET /documents, /documents/{slug} -------------------------------------------


async def test_documents_lists_every_page_with_its_section_tree(service_client: Any) -> None:
    response = await service_client.get("/documents")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["categories"] == SEED_CATEGORIES
    by_slug = {d["slug"]: d for d in body["documents"]}
    assert len(by_slug) == 19
    quick_links = by_slug["widgets/quick-links"]
    assert quick_links["title"] == "Quick Links" and quick_links["category"] == "widgets"
    assert quick_links["summary"].startswith("The Quick Links widget")
    adding = next(s for s in quick_links["sections"] if s["title"] == "Adding a link")
    assert adding["anchor"] == "adding-a-link"
    assert {"title": "From the widget", "anchor": "from-the-widget", "sections": []} in adding["sections"]


async def test_documents_filter_by_category(service_client: Any) -> None:
    response = await service_client.get("/documents", params={"category": "widgets"})
    assert response.status_code == 200
    assert {d["category"] for d in response.json()["documents"]} == {"widgets"}
    assert len(response.json()["documents"]) == 8


async def test_documents_unknown_category_is_400_listing_the_valid_ones(service_client: Any) -> None:
    response = await service_client.get("/documents", params={"category": "calendars"})
    assert response.status_code == 400
    assert response.json()["error"] == (
        "unknown category 'calendars'; valid categories: actions, concepts, widgets"
    )


async def test_one_document_by_slug(service_client: Any) -> None:
    response = await service_client.get("/documents/concepts/workspace")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["slug"] == "concepts/workspace" and body["title"] == "Workspace"
    assert body["content"].startswith("# Workspace") and body["keywords"]


async def test_unknown_slug_is_404_naming_it(service_client: Any) -> None:
    response = await service_client.get("/documents/concepts/nothing-here")
    assert response.status_code == 404
    assert "'concepts/nothing-here'" in response.json()["error"]


# --- categories and anchors in /retrieve ----------------------------------------


async def test_retrieve_category_is_checked_against_the_corpus(service_client: Any) -> None:
    response = await service_client.post("/retrieve", json={"query": "quick links", "category": "plugins"})
    assert response.status_code == 400
    assert "valid categories: actions, concepts, widgets" in response.json()["error"]
    ok = await service_client.post("/retrieve", json={"query": "quick links", "category": "widgets"})
    assert ok.status_code == 200 and ok.json()["results"]


async def test_openapi_describes_category_from_the_corpus_not_a_fixed_list(service_client: Any) -> None:
    """Issue 42 item 5: the categories are the loaded corpus's, declared as an enum at start-up
    (written into the code they would be a fixed list; read from /documents they are the corpus's)."""
    spec = (await service_client.get("/schema/openapi.json")).json()
    category = spec["components"]["schemas"]["RetrieveRequest"]["properties"]["category"]
    documents = (await service_client.get("/documents")).json()
    served = {d["category"] for d in documents["documents"]} if isinstance(documents, dict) else {d["category"] for d in documents}
    enums = [o["enum"] for o in category.get("oneOf", [category]) if "enum" in o]
    assert "GET /documents" in str(category) and enums and set(enums[0]) == served


async def test_chunk_evidence_carries_its_heading_anchor(service_client: Any) -> None:
    response = await service_client.post(
        "/retrieve", json={"query": "how do I reorder quick links", "phase": 2, "top_k": 5})
    results = response.json()["results"]
    assert results and all("anchor" in r for r in results)
    top = results[0]
    expected = top["header_path"].split(" > ")[-1].lower().replace(" ", "-")
    assert top["anchor"] in (expected, "")  # "" only for text before the first heading
    assert any(r["anchor"] for r in results)


# --- link check at seed, against the database -------------------------------------


async def test_failing_link_check_leaves_the_stored_corpus_untouched(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path,
) -> None:
    await seed(migrated_pool, fixture_seeds, chunk_document)
    before = await migrated_pool.fetch("select slug, content_hash from docs_knowledge order by slug")
    page = fixture_seeds / "concepts" / "workspace.md"
    page.write_text(page.read_text() + "\nSee [[Nowhere at all]].\n")
    with pytest.raises(SeedError) as info:
        await seed(migrated_pool, fixture_seeds, chunk_document, SeedOptions(broken_links="fail"))
    assert "workspace.md" in str(info.value) and "[[Nowhere at all]]" in str(info.value)
    assert await migrated_pool.fetch("select slug, content_hash from docs_knowledge order by slug") == before
    # The default (warn) seeds and reports the link.
    report = await seed(migrated_pool, fixture_seeds, chunk_document)
    assert report.documents.updated == 1
    assert any("[[Nowhere at all]]" in b for b in report.broken_links)


# --- Logseq's documentation -----------------------------------------------------------


async def test_logseq_corpus_is_served_with_its_categories_and_pages(logseq_client: Any) -> None:
    ready = (await logseq_client.get("/ready")).json()
    assert ready["documents"] == 238 and ready["last_seed_error"] is None
    listing = (await logseq_client.get("/documents")).json()
    assert listing["categories"] == ["general"]
    page = (await logseq_client.get("/documents/undo-and-redo")).json()
    assert [s["anchor"] for s in page["sections"]] == ["usage", "functionality"]
    assert "type::" not in page["content"]
    answer = (await logseq_client.post("/retrieve", json={"query": "flashcards", "category": "general"})).json()
    assert answer["results"][0]["doc_slug"] == "flashcards"
    wrong = await logseq_client.post("/retrieve", json={"query": "flashcards", "category": "widgets"})
    assert wrong.status_code == 400 and "valid categories: general" in wrong.json()["error"]


READY_TIMEOUT_S = 900


@pytest.mark.slow
def test_serve_with_seeds_dir_pointing_at_logseq_docs(tmp_path: Path, logseq_client: Any, logseq_dsn: str) -> None:
    """`SEEDS_DIR=tests/corpora/logseq-docs python -m service serve` becomes ready with every page.

    It joins the database `logseq_client` seeded, as a second replica would: its own
    seed finds every page unchanged and every vector present, so the suite embeds
    the corpus once (the embedded-server path of `serve` is tested in test_serve.py)."""
    port, log = free_port(), tmp_path / "serve.log"
    proc = start_serve(tmp_path / "pg", port, log, env={"SEEDS_DIR": str(LOGSEQ_DOCS), "DATABASE_URL": logseq_dsn})
    try:
        ready = wait_ready(proc, port, log, timeout_s=READY_TIMEOUT_S)
        assert ready["documents"] == 238 and ready["semantic_ready"] is True
        text = log.read_text()
        # Every chunk's vector was already there: nothing embedded, all reused.
        chunks = re.search(r"ready: 238 documents, (\d+) chunks", text)
        assert chunks is not None, text[-2000:]
        assert f"embeddings: 0 embedded, {chunks.group(1)} reused" in text, text[-2000:]
        # A question the default answers (a golden case that passes at phase 3: tests/golden/logseq.yaml).
        response = httpx.post(f"http://127.0.0.1:{port}/retrieve", json={"query": "flashcards"})
        assert response.json()["results"][0]["doc_slug"] == "flashcards", response.text
    finally:
        stop(proc, log)
