"""On-disk embedding cache keyed by (model, content hash): a second run does not re-embed.

Layout: `<root>/<model>/<hash[:2]>/<hash>.npy`, one float32 vector per input,
where hash = sha256 of the exact model input (context + text). Wraps any
embedder with `embed_passages` / `embed_query` and stays one, so the service's
indexer and semantic leg take it unchanged.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


class VectorStore:
    def __init__(self, root: Path, model: str) -> None:
        self.root = root / _safe(model)
        self.hits = 0
        self.misses = 0

    def _path(self, kind: str, context: str, text: str) -> Path:
        digest = hashlib.sha256(f"{kind}\x00{context}\x00{text}".encode()).hexdigest()
        return self.root / digest[:2] / f"{digest}.npy"

    def get_many(
        self, kind: str, items: Sequence[tuple[str, str]], compute: Callable[[list[tuple[str, str]]], Any]
    ) -> npt.NDArray[np.float32]:
        paths = [self._path(kind, c, t) for c, t in items]
        found: dict[int, Vector] = {}
        for i, path in enumerate(paths):
            if path.is_file():
                found[i] = np.load(path)
        missing = [i for i in range(len(items)) if i not in found]
        self.hits += len(found)
        self.misses += len(missing)
        if missing:
            vectors = np.asarray(compute([items[i] for i in missing]), dtype=np.float32)
            for i, vector in zip(missing, vectors, strict=True):
                paths[i].parent.mkdir(parents=True, exist_ok=True)
                tmp = paths[i].with_suffix(".tmp.npy")
                np.save(tmp, vector)
                tmp.replace(paths[i])
                found[i] = vector
        if not items:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[i] for i in range(len(items))]).astype(np.float32)


class CachedEmbedder:
    """The service's Embedder with a disk cache in front of it."""

    def __init__(self, inner: Any, root: Path) -> None:
        self.inner = inner
        self.model_name: str = inner.model_name
        self.dim: int = inner.dim
        self.store = VectorStore(root, self.model_name)

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
