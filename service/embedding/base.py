"""What every embedding backend shares: the protocol, model identity and the
windowing of long passages.

Passages are embedded as "<header path>: <text>" so that a chunk's breadcrumb
(which holds the document title) takes part in its meaning. No silent
truncation: a passage longer than the model window (256 word pieces for
MiniLM) is embedded in overlapping windows cut on tokenizer offsets, and the
window vectors are mean-pooled and re-normalised.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol, get_args

import numpy as np
import numpy.typing as npt

from service.ingest.tokens import TokenCounter, model_name_for

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]
Backend = Literal["torch", "onnx", "onnx-int8"]
BACKENDS: tuple[str, ...] = get_args(Backend)

# Windows of 200 word pieces with 50 of overlap: a sentence cut by one window
# border appears whole in the next one, and 200 + context + [CLS]/[SEP] fits 256.
WINDOW_TOKENS = 200
WINDOW_OVERLAP = 50
# One core stays with the event loop: phase 3 scores the keyword leg there while
# the query is being embedded, and model threads on every core would make that
# work and the model's own threads preempt each other (oversubscription).
RESERVED_FOR_EVENT_LOOP = 1

# Backends whose vectors were MEASURED equal to PyTorch's on the seed corpus
# (cosine >= 0.999 for every chunk; `python -m lab bench --embedding`):
# they share the model's identity, so switching between them re-embeds
# nothing. Any other backend's vectors are stored under their own identity.
INTERCHANGEABLE: frozenset[str] = frozenset({"torch", "onnx"})


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def model_threads(configured: int = 0) -> int:
    """`embedding.threads`, or (0) the available cores minus the event loop's one."""
    if configured > 0:
        return configured
    return max(1, available_cores() - RESERVED_FOR_EVENT_LOOP)


def model_identity(base_name: str, backend: str) -> str:
    """The name stored with every vector: a backend that changes the vectors
    is part of it, so switching to it re-embeds (and switching back reuses)."""
    return base_name if backend in INTERCHANGEABLE else f"{base_name}@{backend}"


class Embedder(Protocol):
    """What phase 3 and indexing need from a model, whichever backend runs it."""

    model_name: str
    """Identity stored with vectors (base model, plus the backend if it changes them)."""
    backend: str
    dim: int

    def embed_query(self, text: str) -> Vector: ...

    def embed_queries(self, texts: Sequence[str]) -> Matrix: ...

    def embed_passages(self, items: Sequence[tuple[str, str]]) -> Matrix: ...


class WindowedEmbedder(ABC):
    """Windowing and pooling over a backend's `_encode` (one batch of model
    inputs → normalised vectors). Thread-safe: one encode at a time."""

    backend: str = ""

    def __init__(self, model_dir: Path, model_name: str | None, dim: int, max_seq_length: int) -> None:
        self.model_dir = model_dir
        self.base_model_name = model_name or model_name_for(model_dir)
        self.model_name = model_identity(self.base_model_name, self.backend)
        self.dim = dim
        self.max_seq_length = max_seq_length
        self._counter = TokenCounter(model_dir)
        self._lock = threading.Lock()

    # --- public API -----------------------------------------------------------

    def embed_query(self, text: str) -> Vector:
        """One normalised vector; queries are short, longer ones are windowed too."""
        vector: Vector = self.embed_queries([text])[0]
        return vector

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Several queries in one forward pass (the micro-batcher's call)."""
        return self.embed_passages([("", text) for text in texts])

    def embed_passages(self, items: Sequence[tuple[str, str]]) -> Matrix:
        """(context, text) pairs → (n, dim) normalised vectors, one per pair."""
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts: list[str] = []
        owner: list[int] = []
        for i, (context, text) in enumerate(items):
            for window in self.windows(context, text):
                texts.append(window)
                owner.append(i)
        with self._lock:
            vectors = self._encode(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        np.add.at(out, np.asarray(owner), vectors)
        return normalise(out)

    def embed_truncated(self, text: str) -> Vector:
        """What plain sentence-transformers does (cuts at max_seq_length): tests compare."""
        with self._lock:
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

    @abstractmethod
    def _encode(self, texts: list[str]) -> Matrix:
        """Model inputs (each within the window) → (n, dim) normalised vectors."""


def normalise(vectors: Matrix) -> Matrix:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: Matrix = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return out
