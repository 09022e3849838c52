"""The PyTorch embedder under its historical name (service/embedding/ holds
the backends; windowing and pooling live in service/embedding/base.py)."""

from __future__ import annotations

from service.embedding.base import WINDOW_OVERLAP, WINDOW_TOKENS, Vector, normalise
from service.embedding.torch_backend import TorchEmbedder as Embedder

__all__ = ["WINDOW_OVERLAP", "WINDOW_TOKENS", "Embedder", "Vector", "normalise"]
