"""Embedding backends on the real model and a real PostgreSQL: ONNX gives
PyTorch's vectors (switching re-embeds nothing), int8 does not (it has its own
identity and re-embeds), batching returns each caller its own vector, and an
embedding server is used for documents only after its probe matches."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import numpy as np
import pytest

from service.embedding.backends import load_embedder, onnx_cache_dir
from service.embedding.base import WindowedEmbedder
from service.embedding.batcher import QueryBatcher
from service.embedding.documents import document_embedder
from service.embedding.remote import (
    PROBE_TEXTS,
    RemoteConfig,
    RemoteEmbedder,
    RemoteEmbeddingError,
    RemoteModelMismatch,
)
from service.flags import EmbeddingFlags
from service.ingest.indexer import index_embeddings
from service.settings import PROJECT_ROOT
from tests.embedding_stand_in import StandIn
from tests.integration.test_embeddings_index import DOCS, insert_docs

# Exported graphs are cached across runs like the evaluation's vectors.
CACHE = onnx_cache_dir(PROJECT_ROOT / ".data" / "pg")
LONG = "Widgets sit on the home page. " * 120  # several windows


@pytest.fixture(scope="module")
def torch_model() -> WindowedEmbedder:
    return load_embedder("torch", None, CACHE)


@pytest.fixture(scope="module")
def onnx_model() -> WindowedEmbedder:
    return load_embedder("onnx", None, CACHE)


async def test_onnx_gives_pytorchs_vectors_and_shares_its_identity(
    torch_model: WindowedEmbedder, onnx_model: WindowedEmbedder
) -> None:
    items = [("Quick Links > Editing", "Right-click a link."), ("", "x"), ("Widgets", LONG)]
    cosine = np.sum(torch_model.embed_passages(items) * onnx_model.embed_passages(items), axis=1)
    assert np.all(cosine >= 0.999), cosine
    assert onnx_model.model_name == torch_model.model_name == "all-MiniLM-L6-v2"
    assert (onnx_model.dim, onnx_model.max_seq_length) == (384, 256)


def test_the_onnx_session_uses_the_sized_thread_count() -> None:
    from service.embedding.base import model_threads

    sized = load_embedder("onnx", None, CACHE)
    assert sized._session.get_session_options().intra_op_num_threads == model_threads()  # type: ignore[attr-defined]
    one = load_embedder("onnx", None, CACHE, threads=1)
    assert one._session.get_session_options().intra_op_num_threads == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
async def test_a_mixed_batch_equals_one_by_one(backend: str) -> None:
    """int8 too: its activation scales would depend on the batch, so it runs texts one by one."""
    model = load_embedder(backend, None, CACHE)
    flags = EmbeddingFlags(batch_wait_ms=200, batch_max=8)
    batcher = QueryBatcher(model, lambda: flags)
    texts = ["explain workspace", "how do I find my notes?", "x", "quick links " * 40, "billing"]
    together = await asyncio.gather(*(batcher.embed(t) for t in texts))
    assert batcher.stats.batches == 1 and batcher.stats.largest == len(texts)
    for text, vector in zip(texts, together, strict=True):
        assert np.abs(vector - model.embed_query(text)).max() < 1e-5, text


async def test_backend_switch_re_embeds_only_when_the_vectors_change(
    migrated_pool: Any, torch_model: WindowedEmbedder, onnx_model: WindowedEmbedder
) -> None:
    await insert_docs(migrated_pool, DOCS)
    total = await migrated_pool.fetchval("select count(*) from docs_knowledge_chunks")
    first = await index_embeddings(migrated_pool, torch_model)
    assert first.embedded == total
    switched = await index_embeddings(migrated_pool, onnx_model)
    assert (switched.embedded, switched.reused) == (0, total)  # measured interchangeable
    int8 = load_embedder("onnx-int8", None, CACHE)
    assert int8.model_name == "all-MiniLM-L6-v2@onnx-int8"
    quantised = await index_embeddings(migrated_pool, int8)
    assert quantised.embedded == total  # different vectors: its own set
    back = await index_embeddings(migrated_pool, torch_model)
    assert back.embedded == 0
    models = {r["model"] for r in await migrated_pool.fetch("select distinct model from chunk_embeddings")}
    assert models == {"all-MiniLM-L6-v2", "all-MiniLM-L6-v2@onnx-int8"}


def remote_for(stand_in: StandIn, local: WindowedEmbedder, **options: Any) -> RemoteEmbedder:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=stand_in.app()), base_url="http://embeddings")
    config = RemoteConfig(url="http://embeddings", model=stand_in.model)
    return RemoteEmbedder(config, local, client=client, **options)


async def test_remote_documents_equal_local_ones_and_requests_are_batched_and_bounded(
    migrated_pool: Any, torch_model: WindowedEmbedder, onnx_model: WindowedEmbedder
) -> None:
    stand_in = StandIn(embed=lambda texts: torch_model.embed_queries(list(texts)))
    await insert_docs(migrated_pool, DOCS)
    async with remote_for(stand_in, onnx_model, batch_size=2, concurrency=2) as remote:
        report = await index_embeddings(migrated_pool, remote, batch_size=8)
    assert report.model == "all-MiniLM-L6-v2" and report.embedded > 0
    probe, *documents = stand_in.batch_sizes
    assert probe == 3 and max(documents) <= 2 and stand_in.max_in_flight == 2
    rows = await migrated_pool.fetch(
        "select c.header_path, c.title, c.content, e.embedding::text as embedding from chunk_embeddings e "
        "join docs_knowledge_chunks c on c.id = e.chunk_id"
    )
    local = onnx_model.embed_passages([(r["header_path"] or r["title"], r["content"]) for r in rows])
    stored = np.asarray([json.loads(r["embedding"]) for r in rows], dtype=np.float32)
    assert np.all(np.sum(local * stored, axis=1) >= 0.999)


async def test_a_remote_model_of_another_dimension_is_refused_naming_both(onnx_model: WindowedEmbedder) -> None:
    stand_in = StandIn(embed=lambda texts: onnx_model.embed_queries(list(texts)), transform=lambda v: v[:, :128])
    async with remote_for(stand_in, onnx_model) as remote:
        with pytest.raises(RemoteModelMismatch, match=r"128-dimensional vectors; the local query model 'all-MiniLM-L6-v2' has 384"):
            await remote.probe()


async def test_a_remote_model_with_other_vectors_is_refused_before_any_write(
    migrated_pool: Any, onnx_model: WindowedEmbedder
) -> None:
    await insert_docs(migrated_pool, DOCS)
    rng = np.random.default_rng(0)
    rotation = np.linalg.qr(rng.standard_normal((384, 384)))[0].astype(np.float32)
    stand_in = StandIn(embed=lambda texts: onnx_model.embed_queries(list(texts)), transform=lambda v: v @ rotation)
    async with remote_for(stand_in, onnx_model) as remote:
        with pytest.raises(RemoteModelMismatch, match=r"probe cosine -?0\.\d{4} < 0\.999 \(both 384-dimensional\)"):
            await index_embeddings(migrated_pool, remote)
    assert await migrated_pool.fetchval("select count(*) from chunk_embeddings") == 0


async def test_a_remote_that_fails_twice_then_answers_is_retried_with_back_off(onnx_model: WindowedEmbedder) -> None:
    stand_in = StandIn(embed=lambda texts: onnx_model.embed_queries(list(texts)), fail_first=2)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async with remote_for(stand_in, onnx_model, retries=3, backoff_s=0.5, sleep=sleep) as remote:
        assert await remote.probe() >= 0.999
    assert stand_in.requests == 3 and slept == [0.5, 1.0]

    stand_in = StandIn(embed=lambda texts: onnx_model.embed_queries(list(texts)), fail_first=5)
    async with remote_for(stand_in, onnx_model, retries=2, sleep=sleep) as remote:
        with pytest.raises(RemoteEmbeddingError, match=r"failed after 3 attempt\(s\): HTTP 503"):
            await remote.probe()


async def test_the_remote_is_chosen_by_environment_and_probed_before_its_first_batch(onnx_model: WindowedEmbedder) -> None:
    flags = EmbeddingFlags()
    async with document_embedder(onnx_model, flags, env={}) as (local, batch):
        assert local is onnx_model and batch == flags.batch_size
    with pytest.raises(RemoteEmbeddingError, match="EMBEDDING_REMOTE_MODEL"):
        async with document_embedder(onnx_model, flags, env={"EMBEDDING_REMOTE_URL": "http://127.0.0.1:9/v1"}):
            pass
    stand_in = StandIn(embed=lambda texts: onnx_model.embed_queries(list(texts)))
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=stand_in.app()))
    env = {"EMBEDDING_REMOTE_URL": "http://embeddings/v1", "EMBEDDING_REMOTE_MODEL": stand_in.model}
    async with document_embedder(onnx_model, flags, env=env, client=client) as (remote, batch):
        assert isinstance(remote, RemoteEmbedder) and batch == flags.remote_batch_size * flags.remote_concurrency
        assert stand_in.requests == 0  # nothing to embed yet: the server is not needed
        await remote.embed_passages_async([("Notes", "Pin a note.")])
        assert remote.probed and stand_in.batch_sizes == [len(PROBE_TEXTS), 1]  # probe first
    assert client.is_closed
