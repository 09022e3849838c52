"""Embedding cache for the evaluations, keyed by (model, exact input): a second run does not re-embed.

Passages, queries and the plain truncated baseline's inputs, each kind keyed apart (sha256 of
kind, context and text), in the service's own vector file (`service/embedding/vector_cache.py`).
Wraps any embedder with `embed_passages` / `embed_query` and stays one, so the service's indexer
and semantic leg take it unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from service.embedding.vector_cache import VectorCache

Vector = npt.NDArray[np.float32]


class VectorStore:
    def __init__(self, root: Path, model: str, dim: int) -> None:
        self.cache = VectorCache(root, model, dim)
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(kind: str, context: str, text: str) -> str:
        return hashlib.sha256(f"{kind}\x00{context}\x00{text}".encode()).hexdigest()

    def get_many(
        self, kind: str, items: Sequence[tuple[str, str]], compute: Callable[[list[tuple[str, str]]], Any]
    ) -> npt.NDArray[np.float32]:
        keys = [self.key(kind, c, t) for c, t in items]
        found = self.cache.get(keys)
        missing = [i for i, key in enumerate(keys) if key not in found]
        self.hits += len(items) - len(missing)
        self.misses += len(missing)
        if missing:
            vectors = np.asarray(compute([items[i] for i in missing]), dtype=np.float32)
            self.cache.put([keys[i] for i in missing], vectors)
            found.update((keys[i], v) for i, v in zip(missing, vectors, strict=True))
        if not items:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[key] for key in keys]).astype(np.float32)


class CachedEmbedder:
    """The service's Embedder with a disk cache in front of it."""

    def __init__(self, inner: Any, root: Path) -> None:
        self.inner = inner
        self.model_name: str = inner.model_name
        self.dim: int = inner.dim
        self.store = VectorStore(root, self.model_name, self.dim)

    def embed_passages(self, items: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.store.get_many("passage", items, self.inner.embed_passages)

    def embed_query(self, text: str) -> Vector:
        vector: Vector = self.store.get_many(
            "query", [("", text)], lambda items: [self.inner.embed_query(items[0][1])]
        )[0]
        return vector

    def embed_truncated_many(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Plain sentence-transformers (cut at the model window): the dense baseline."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)

        def compute(items: list[tuple[str, str]]) -> Any:
            return self.inner._encode([t for _, t in items])

        return self.store.get_many("truncated", [("", t) for t in texts], compute)
