"""Sentence-transformers embedder, loaded offline from a local directory.

Passages are embedded as "<header path>: <text>" so that a chunk's breadcrumb
(which holds the document title) takes part in its meaning. No silent
truncation: a passage longer than the model window (256 word pieces for
MiniLM) is embedded in overlapping windows cut on tokenizer offsets, and the
window vectors are mean-pooled and re-normalised.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import numpy.typing as npt

from service.ingest.tokens import (
    ModelNotFoundError,
    TokenCounter,
    default_model_dir,
    model_name_for,
    validate_model_dir,
)

Vector = npt.NDArray[np.float32]

# Windows of 200 word pieces with 50 of overlap: a sentence cut by one window
# border appears whole in the next one, and 200 + context + [CLS]/[SEP] fits 256.
WINDOW_TOKENS = 200
WINDOW_OVERLAP = 50
# Two cores on the target machines: more threads only add contention.
DEFAULT_THREADS = 2


class Embedder:
    """Wraps one SentenceTransformer; thread-safe (one encode at a time)."""

    def __init__(
        self,
        model_dir: Path | str | None = None,
        *,
        model_name: str | None = None,
        num_threads: int | None = None,
        batch_size: int = 32,
    ) -> None:
        path = validate_model_dir(Path(model_dir)) if model_dir else default_model_dir()
        import torch
        import transformers
        from sentence_transformers import SentenceTransformer

        transformers.logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # no log bar

        torch.set_num_threads(num_threads or min(DEFAULT_THREADS, os.cpu_count() or 1))
        try:
            self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except Exception as exc:  # the library raises many types for a broken dir
            raise ModelNotFoundError(f"cannot load embedding model from {path}: {exc}") from exc
        self.model_dir = path
        self.model_name = model_name or model_name_for(path)
        dim = self._model.get_embedding_dimension()
        if dim is None:
            raise ModelNotFoundError(f"embedding model at {path} reports no dimension")
        self.dim: int = dim
        self.max_seq_length: int = int(self._model.max_seq_length or 256)
        self.batch_size = batch_size
        self._counter = TokenCounter(path)
        self._lock = threading.Lock()

    # --- public API -----------------------------------------------------------

    def embed_query(self, text: str) -> Vector:
        """One normalised vector; queries are short, longer ones are windowed too."""
        vectors: Vector = self.embed_passages([("", text)])[0]
        return vectors

    def embed_passages(self, items: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        """(context, text) pairs → (n, dim) normalised vectors, one per pair."""
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts: list[str] = []
        owner: list[int] = []
        for i, (context, text) in enumerate(items):
            for window in self.windows(context, text):
                texts.append(window)
                owner.append(i)
        vectors = self._encode(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        np.add.at(out, np.asarray(owner), vectors)
        return _normalise(out)

    def embed_truncated(self, text: str) -> Vector:
        """What plain sentence-transformers does (cuts at max_seq_length): tests compare."""
        vector: Vector = self._encode([text])[0]
        return vector

    def windows(self, context: str, text: str) -> list[str]:
        """Model inputs for one passage: one string, or overlapping windows if too long."""
        prefix = f"{context}: " if context else ""
        budget = self.max_seq_length - 2  # [CLS] and [SEP]
        if self._counter.count(prefix + text) <= budget:
            return [prefix + text]
        size = min(WINDOW_TOKENS, budget - self._counter.count(prefix))
        if size < 32:  # a huge context would leave no room for text: drop it
            prefix, size = "", min(WINDOW_TOKENS, budget)
        step = max(1, size - min(WINDOW_OVERLAP, size // 4))
        offsets = self._counter.offsets(text)
        out: list[str] = []
        for start in range(0, len(offsets), step):
            end = min(start + size, len(offsets))
            out.append(prefix + text[offsets[start][0] : offsets[end - 1][1]])
            if end == len(offsets):
                break
        return out

    # --- internals ------------------------------------------------------------

    def _encode(self, texts: list[str]) -> npt.NDArray[np.float32]:
        with self._lock:
            vectors = self._model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)


def _normalise(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: npt.NDArray[np.float32] = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return out
