"""Which embedder writes document vectors: the local model, or an embedding
server (EMBEDDING_REMOTE_URL) once its probe proved it gives the same vectors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from service.embedding.base import WindowedEmbedder
from service.embedding.remote import RemoteConfig, RemoteEmbedder
from service.flags import EmbeddingFlags


@asynccontextmanager
async def document_embedder(
    local: WindowedEmbedder, flags: EmbeddingFlags, env: Mapping[str, str] | None = None, **remote_options: Any,
) -> AsyncIterator[tuple[WindowedEmbedder | RemoteEmbedder, int]]:
    """(embedder, indexer batch size). A remote one probes the server before
    its first batch, so before any write (RemoteModelMismatch names both
    models), and not at all when nothing needs embedding: a server that is
    down then does not switch phase 3 off."""
    config = RemoteConfig.from_env(env)
    if config is None:
        yield local, flags.batch_size
        return
    async with RemoteEmbedder(
        config, local, batch_size=flags.remote_batch_size, concurrency=flags.remote_concurrency,
        retries=flags.remote_retries, **remote_options,
    ) as remote:
        # One indexer batch feeds every concurrent request.
        yield remote, flags.remote_batch_size * flags.remote_concurrency
