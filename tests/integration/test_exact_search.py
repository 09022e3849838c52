"""Exact semantic search on a real PostgreSQL (pgvector): every vector compared, ties in order.

HNSW's graph differs from one build to the next, so two replicas seeded with the same pages
could return different neighbours; a corpus small enough (`semantic.exact_search_max_vectors`)
is searched exactly instead, and these tests hold that search to a brute-force cosine."""

from __future__ import annotations

from typing import Any

import numpy as np

from service.db.vectors import vector_literal
from service.embedding.torch_backend import TorchEmbedder
from service.ingest.indexer import index_embeddings
from service.scoring.semantic import semantic_search
from tests.integration.test_embeddings_index import DOCS, insert_docs


async def _stored(pool: Any, model: str) -> tuple[list[tuple[str, int]], np.ndarray]:
    rows = await pool.fetch(
        "select c.doc_slug, c.chunk_index, e.embedding::text as v from chunk_embeddings e "
        "join docs_knowledge_chunks c on c.id = e.chunk_id where e.model = $1 and e.kind = 'body'", model)
    keys = [(r["doc_slug"], r["chunk_index"]) for r in rows]
    vectors = np.array([[float(x) for x in r["v"].strip("[]").split(",")] for r in rows], dtype=np.float64)
    return keys, vectors


async def test_exact_search_returns_the_brute_force_neighbours_in_order(migrated_pool: Any) -> None:
    pool = migrated_pool
    embedder = TorchEmbedder()
    await insert_docs(pool, DOCS)
    await index_embeddings(pool, embedder)
    keys, vectors = await _stored(pool, embedder.model_name)
    query = embedder.embed_query("pin a page so it is one click away")
    cosine = vectors @ query.astype(np.float64) / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    expected = [keys[i] for i in np.argsort(-cosine, kind="stable")[:3]]
    hits = await semantic_search(pool, query, embedder.model_name, embedder.dim, 3, exact=True)
    assert [(h.doc_slug, h.chunk_index) for h in hits] == expected
    assert [round(h.similarity, 4) for h in hits] == [round(float(c), 4) for c in sorted(cosine, reverse=True)[:3]]


async def test_equal_distances_come_back_in_page_and_chunk_order(migrated_pool: Any) -> None:
    pool = migrated_pool
    embedder = TorchEmbedder()
    await insert_docs(pool, DOCS)
    await index_embeddings(pool, embedder)
    # Every stored vector made the same: the order can only come from the tie-break.
    same = np.zeros(embedder.dim, dtype=np.float32)
    same[0] = 1.0
    await pool.execute("update chunk_embeddings set embedding = $1::text::vector", vector_literal(same))
    keys, _ = await _stored(pool, embedder.model_name)
    hits = await semantic_search(pool, same, embedder.model_name, embedder.dim, len(keys), exact=True)
    assert [(h.doc_slug, h.chunk_index) for h in hits] == sorted(keys)
