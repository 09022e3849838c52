"""Document embedding on an OpenAI-compatible embedding server.

`POST {url}/v1/embeddings` with `{"model": ..., "input": [...]}` is what
Hugging Face Text Embeddings Inference, vLLM and Infinity serve. Seeding a
large corpus can hand its passages to such a server (EMBEDDING_REMOTE_URL,
EMBEDDING_REMOTE_MODEL) while queries stay on the local model; so before
anything is written, `probe()` checks that the server's model gives the
local model's vectors (same dimension, cosine >= 0.999 on probe sentences)
and refuses otherwise, naming both. Passages are windowed exactly as the
local model would (base.WindowedEmbedder.windows) and the windows pooled
here, so a stored vector does not depend on where it was computed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from service.embedding.base import Matrix, WindowedEmbedder, normalise
from service.ingest.model_thread import on_model_thread

PROBE_COSINE = 0.999
PROBE_TEXTS = (
    "How do I pin a note to the workspace?",
    "Widgets: the calendar widget shows upcoming events on the home page.",
    "x",
)
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
Sleep = Callable[[float], Awaitable[None]]


class RemoteEmbeddingError(RuntimeError):
    """The embedding server failed (after retries) or answered nonsense."""


class RemoteModelMismatch(RemoteEmbeddingError):
    """The server's model does not give the local query model's vectors."""


@dataclass(frozen=True)
class RemoteConfig:
    url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0

    @property
    def endpoint(self) -> str:
        """`.../v1/embeddings` whether the URL names the server, its `/v1` or the endpoint."""
        base = self.url.rstrip("/")
        path = urlsplit(base).path
        if path.endswith("/embeddings"):
            return base
        return base + ("/embeddings" if path.endswith("/v1") else "/v1/embeddings")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RemoteConfig | None:
        """EMBEDDING_REMOTE_URL (+ EMBEDDING_REMOTE_MODEL, EMBEDDING_REMOTE_API_KEY); None if unset."""
        env = os.environ if env is None else env
        url = env.get("EMBEDDING_REMOTE_URL", "").strip()
        if not url:
            return None
        model = env.get("EMBEDDING_REMOTE_MODEL", "").strip()
        if not model:
            raise RemoteEmbeddingError("EMBEDDING_REMOTE_URL is set but EMBEDDING_REMOTE_MODEL is not")
        return cls(url=url, model=model, api_key=env.get("EMBEDDING_REMOTE_API_KEY") or None)


class RemoteEmbedder:
    """Passages → vectors on the server; identity and dimension of the local model."""

    def __init__(
        self,
        config: RemoteConfig,
        local: WindowedEmbedder,
        *,
        batch_size: int = 64,
        concurrency: int = 4,
        retries: int = 4,
        backoff_s: float = 0.5,
        client: httpx.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.config = config
        self.local = local
        self.model_name = local.model_name
        self.dim = local.dim
        self.backend = f"remote:{config.model}"
        self.batch_size = max(1, batch_size)
        self.retries = max(0, retries)
        self.backoff_s = backoff_s
        self._limit = asyncio.Semaphore(max(1, concurrency))
        self._client = client
        self._sleep = sleep
        self.requests = 0
        self.probed = False

    async def __aenter__(self) -> RemoteEmbedder:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
            self._client = httpx.AsyncClient(timeout=self.config.timeout_s, headers=headers)
        return self._client

    async def probe(self) -> float:
        """Refuse (RemoteModelMismatch) unless the server gives the local vectors; the lowest cosine."""
        remote = await self._post(list(PROBE_TEXTS))
        local = await on_model_thread(self.local.embed_queries, list(PROBE_TEXTS))
        where = f"remote model {self.config.model!r} at {self.config.endpoint}"
        if remote.shape[1] != local.shape[1]:
            raise RemoteModelMismatch(
                f"{where} returns {remote.shape[1]}-dimensional vectors; the local query model "
                f"{self.model_name!r} has {local.shape[1]}: refusing to index with it"
            )
        cosine = float(np.min(np.sum(normalise(remote) * local, axis=1)))
        if cosine < PROBE_COSINE:
            raise RemoteModelMismatch(
                f"{where} is not the local query model {self.model_name!r}: probe cosine "
                f"{cosine:.4f} < {PROBE_COSINE} (both {local.shape[1]}-dimensional): refusing to index with it"
            )
        self.probed = True
        return cosine

    async def embed_passages_async(self, items: Sequence[tuple[str, str]]) -> Matrix:
        """(context, text) pairs → (n, dim) normalised vectors, windows pooled as locally."""
        if not self.probed:
            await self.probe()
        texts: list[str] = []
        owner: list[int] = []
        for i, (context, text) in enumerate(items):
            for window in self.local.windows(context, text):
                texts.append(window)
                owner.append(i)
        parts = await asyncio.gather(
            *(self._post(texts[s : s + self.batch_size]) for s in range(0, len(texts), self.batch_size))
        )
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if texts:
            np.add.at(out, np.asarray(owner), normalise(np.vstack(parts)))
        return normalise(out)

    async def _post(self, texts: list[str]) -> Matrix:
        body = {"model": self.config.model, "input": texts, "encoding_format": "float"}
        attempt = 0
        while True:
            async with self._limit:
                try:
                    self.requests += 1
                    response = await self._http().post(self.config.endpoint, json=body)
                    problem = None if response.status_code < 400 else f"HTTP {response.status_code}: {response.text[:200]}"
                    retry = response.status_code in RETRY_STATUSES
                except httpx.TransportError as exc:
                    problem, retry = f"{type(exc).__name__}: {exc}", True
            if problem is None:
                return self._vectors(response.json(), len(texts))
            if not retry or attempt >= self.retries:
                raise RemoteEmbeddingError(
                    f"embedding server {self.config.endpoint} failed after {attempt + 1} attempt(s): {problem}"
                )
            await self._sleep(self.backoff_s * 2**attempt)
            attempt += 1

    def _vectors(self, payload: Any, expected: int) -> Matrix:
        try:
            rows = sorted(payload["data"], key=lambda row: int(row["index"]))
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise RemoteEmbeddingError(f"embedding server {self.config.endpoint} answered no embeddings: {exc}") from exc
        if vectors.ndim != 2 or len(vectors) != expected:
            raise RemoteEmbeddingError(
                f"embedding server {self.config.endpoint} returned {len(vectors)} vectors for {expected} inputs"
            )
        return vectors
