"""The PyTorch backend: the model through sentence-transformers, as packaged."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

from service.embedding.base import Matrix, WindowedEmbedder, model_threads
from service.ingest.tokens import ModelNotFoundError, default_model_dir, validate_model_dir


class TorchEmbedder(WindowedEmbedder):
    """Wraps one SentenceTransformer on the CPU."""

    backend = "torch"

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

        torch.set_num_threads(num_threads or model_threads())
        try:
            self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except Exception as exc:  # the library raises many types for a broken dir
            raise ModelNotFoundError(f"cannot load embedding model from {path}: {exc}") from exc
        dim = self._model.get_embedding_dimension()
        if dim is None:
            raise ModelNotFoundError(f"embedding model at {path} reports no dimension")
        super().__init__(path, model_name, dim, int(self._model.max_seq_length or 256))
        self.batch_size = batch_size

    def _encode(self, texts: list[str]) -> Matrix:
        vectors = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)
