"""Query-embedding LRU cache and off-loop embedding (fake model, no I/O)."""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt
import pytest

from service.scoring.semantic import (
    QueryEmbeddingCache,
    embed_query_async,
    semantic_sql,
    vector_literal,
)


class FakeEmbedder:
    model_name = "fake"

    def __init__(self) -> None:
        self.calls = 0
        self.threads: set[str] = set()

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.threads.add(threading.current_thread().name)
        return np.full(3, float(len(text)), dtype=np.float32)


def test_lru_evicts_least_recent_and_counts() -> None:
    cache = QueryEmbeddingCache(max_size=2)
    cache.put("m", "a", np.ones(2, dtype=np.float32))
    cache.put("m", "b", np.ones(2, dtype=np.float32))
    assert cache.get("m", "a") is not None  # a is now most recent
    cache.put("m", "c", np.ones(2, dtype=np.float32))
    assert cache.get("m", "b") is None  # evicted
    assert cache.get("m", "c") is not None
    assert cache.get("other-model", "a") is None  # keyed by model too
    assert cache.stats() == {"size": 2, "hits": 2, "misses": 2}


def test_cached_vectors_are_read_only_and_whitespace_insensitive() -> None:
    cache = QueryEmbeddingCache(max_size=1024)
    cache.put("m", "quick  links", np.zeros(2, dtype=np.float32))
    vector = cache.get("m", " quick links ")
    assert vector is not None
    with pytest.raises(ValueError):
        vector[0] = 1.0


async def test_embed_query_async_uses_cache_and_worker_thread() -> None:
    embedder = FakeEmbedder()
    cache = QueryEmbeddingCache(max_size=8)
    first = await embed_query_async(embedder, "notes", cache)
    second = await embed_query_async(embedder, "notes", cache)
    assert np.array_equal(first, second)
    assert embedder.calls == 1
    assert cache.hits == 1 and cache.misses == 1
    assert embedder.threads and all(t.startswith("model") for t in embedder.threads)  # the one model thread
    await embed_query_async(embedder, "notes", None)  # no cache: always computes
    assert embedder.calls == 2


def test_vector_literal_and_sql_shape() -> None:
    assert vector_literal(np.array([0.5, -1.0, 0.0], dtype=np.float32)) == "[0.5,-1,0]"
    sql = semantic_sql(384, with_category=True)
    assert "e.embedding::vector(384) <=> (select $1::text::vector(384))" in sql
    assert "e.dim = 384" in sql and "c.category = $3" in sql and "limit $4" in sql
    with pytest.raises(ValueError):
        semantic_sql(0, with_category=False)


async def test_model_work_always_runs_on_the_same_dedicated_thread() -> None:
    """One thread for loading, passages and queries: one OpenMP team in torch."""
    import threading

    from service.ingest.model_thread import on_model_thread

    first = await on_model_thread(threading.get_ident)
    second = await on_model_thread(threading.get_ident)
    assert first == second != threading.get_ident()
