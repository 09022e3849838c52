"""Representation vectors (issue 19) on a real PostgreSQL with the real model:
stored beside the chunk bodies with their kind in the identity, re-embedded
incrementally, and searched with one query embedding."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from service.embedding.torch_backend import TorchEmbedder
from service.ingest.indexer import active_model, index_embeddings
from service.scoring.semantic import semantic_search
from tests.integration.test_embeddings_index import DOCS, CountingEmbedder, insert_docs

ALL = ("body", "section", "page")


@pytest.fixture(scope="module")
def real_embedder() -> TorchEmbedder:
    return TorchEmbedder()


async def test_kinds_are_stored_beside_bodies_and_re_embedded_only_when_their_input_changes(
    migrated_pool: Any, real_embedder: TorchEmbedder,
) -> None:
    pool = migrated_pool
    await insert_docs(pool, DOCS)
    await pool.execute("update docs_knowledge set summary = 'Pinned shortcuts on the dashboard.' "
                       "where slug = 'widgets/quick-links'")
    chunks = await pool.fetchval("select count(*) from docs_knowledge_chunks")
    embedder = CountingEmbedder(real_embedder)
    bodies = await index_embeddings(pool, embedder)
    assert (bodies.embedded, bodies.total) == (chunks, chunks)
    first = await index_embeddings(pool, embedder, kinds=ALL)
    # Bodies were current: only the new kinds (a section per chunk, a page per document).
    assert first.embedded == chunks + len(DOCS) and first.reused == chunks
    kinds = dict(await pool.fetch("select kind, count(*) from chunk_embeddings group by kind"))
    assert kinds == {"body": chunks, "section": chunks, "page": len(DOCS)}
    assert (await index_embeddings(pool, embedder, kinds=ALL)).embedded == 0

    # A new summary changes one input: the page vector of that page.
    before = embedder.embedded
    await pool.execute("update docs_knowledge set summary = 'Shortcuts one click away.' "
                       "where slug = 'widgets/quick-links'")
    report = await index_embeddings(pool, embedder, kinds=ALL)
    assert report.embedded == 1 and embedder.embedded == before + 1
    # Serving still counts bodies only.
    assert await active_model(pool, embedder.model_name) == embedder.model_name


async def test_search_keeps_each_chunk_once_with_its_best_kind(
    migrated_pool: Any, real_embedder: TorchEmbedder,
) -> None:
    pool = migrated_pool
    await insert_docs(pool, DOCS)
    await pool.execute("update docs_knowledge set summary = 'Jot a thought down fast; it goes to the Inbox.' "
                       "where slug = 'widgets/quick-capture'")
    await index_embeddings(pool, real_embedder, kinds=ALL)
    query = real_embedder.embed_query("write an idea down quickly")
    model, dim = real_embedder.model_name, real_embedder.dim
    bodies = await semantic_search(pool, query, model, dim, top_k=20)
    both = await semantic_search(pool, query, model, dim, top_k=20, kinds=ALL)
    assert {h.representation for h in bodies} == {"body"}
    ids = [h.chunk_id for h in both]
    assert len(ids) == len(set(ids)) == len(bodies)  # one hit per chunk, every chunk
    by_id = {h.chunk_id: h for h in bodies}
    for hit in both:  # a chunk scores by its best representation, never below its body
        assert hit.similarity >= by_id[hit.chunk_id].similarity - 1e-6
    capture = next(h for h in both if h.doc_slug == "widgets/quick-capture")
    assert capture.representation in ALL
    assert np.isclose(max(h.similarity for h in both), both[0].similarity)
