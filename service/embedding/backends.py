"""Pick and load the backend named by `embedding.backend`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from service.embedding.base import BACKENDS, WindowedEmbedder, model_threads


def onnx_cache_dir(data_dir: Path, env: Mapping[str, str] | None = None) -> Path:
    """Exported graphs live beside the embedded PostgreSQL's data directory,
    or in EMBEDDING_CACHE_DIR (one export shared by several data directories)."""
    configured = (os.environ if env is None else env).get("EMBEDDING_CACHE_DIR", "").strip()
    return Path(configured).expanduser() if configured else data_dir.resolve().parent / "models"


def load_embedder(backend: str, model_dir: Path | str | None, cache_dir: Path,
                  threads: int = 0) -> WindowedEmbedder:
    """A loaded model (seconds: run it on the model thread); `threads` 0 sizes
    the model's threads to the cores (`model_threads`)."""
    num_threads = model_threads(threads)
    if backend == "torch":
        from service.embedding.torch_backend import TorchEmbedder

        return TorchEmbedder(model_dir, num_threads=num_threads)
    if backend in ("onnx", "onnx-int8"):
        from service.embedding.onnx_backend import OnnxEmbedder

        return OnnxEmbedder(model_dir, cache_dir=cache_dir, int8=backend == "onnx-int8", num_threads=num_threads)
    raise ValueError(f"unknown embedding backend {backend!r}; known: {', '.join(BACKENDS)}")
