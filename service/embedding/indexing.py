"""`seed --embed`: embed the chunks lacking a vector, outside the server."""

from __future__ import annotations

import logging
from typing import Any

from service.embedding.backends import load_embedder, onnx_cache_dir
from service.embedding.base import available_cores
from service.embedding.documents import document_embedder
from service.embedding.vector_cache import kept_for
from service.flags import Flags
from service.ingest.indexer import IndexReport, index_embeddings
from service.ingest.model_thread import on_model_thread
from service.settings import Settings

log = logging.getLogger(__name__)


async def embed_corpus(pool: Any, settings: Settings, flags: Flags) -> IndexReport:
    """Local model for the probe/windows; documents on EMBEDDING_REMOTE_URL if set."""
    # No requests to serve in this process: the model may have every core.
    cache_dir = onnx_cache_dir(settings.data_dir)
    local = await on_model_thread(
        load_embedder, flags.embedding.backend, settings.embedding_model, cache_dir,
        flags.embedding.threads or available_cores(),
    )
    async with document_embedder(local, flags.embedding) as (documents, batch_size):
        known = kept_for(cache_dir, local, documents, flags.embedding.keep_vectors)
        return await index_embeddings(
            pool, documents, batch_size=batch_size, progress=log.info, kinds=flags.semantic.representations,
            known=known,
        )
