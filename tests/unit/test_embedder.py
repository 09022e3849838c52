"""Embedder: offline load, clear failure, normalisation, and no silent truncation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from service.embedding.torch_backend import TorchEmbedder as Embedder
from service.ingest.tokens import ModelNotFoundError


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


def test_missing_model_fails_with_clear_message(tmp_path: Path) -> None:
    missing = tmp_path / "models" / "absent-model"
    with pytest.raises(ModelNotFoundError, match="absent-model"):
        Embedder(missing)


def test_broken_model_directory_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    with pytest.raises(ModelNotFoundError, match="cannot load embedding model"):
        Embedder(tmp_path)


def test_identity_and_shapes(embedder: Embedder) -> None:
    assert embedder.model_name == "all-MiniLM-L6-v2"
    assert embedder.dim == 384
    assert embedder.max_seq_length == 256
    vectors = embedder.embed_passages([("Quick Links > Editing", "Right-click a link."), ("", "x")])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("how do I edit a link?")
    assert query.shape == (384,)
    assert embedder.embed_passages([]).shape == (0, 384)


def test_context_is_prepended(embedder: Embedder) -> None:
    assert embedder.windows("Quick Links > Editing links", "Right-click.") == [
        "Quick Links > Editing links: Right-click."
    ]


FILLER = (
    "The dashboard arranges widgets in a grid of columns, and each card can be resized "
    "by dragging its lower corner until the layout looks right. "
)
TAIL = (
    "Anything typed into Quick Capture is saved as a new note in the Inbox workspace, "
    "so a passing thought is never lost."
)


def test_tail_of_long_passage_is_found(embedder: Embedder) -> None:
    passage = FILLER * 12 + TAIL
    context = "Dashboard > Layout"
    windows = embedder.windows(context, passage)
    assert len(windows) > 1
    assert all(embedder._counter.count(w) <= embedder.max_seq_length - 2 for w in windows)
    assert windows[-1].endswith("never lost.")  # the tail reaches the model
    assert all(w.startswith(context + ": ") for w in windows)

    pooled = embedder.embed_passages([(context, passage)])[0]
    truncated = embedder.embed_truncated(f"{context}: {passage}")  # plain max_seq_length cut
    # What only the tail says is in the pooled vector and cannot be in the cut one:
    # closer to the tail on its own, and to every question about it (no fitted margin).
    tail = embedder.embed_passages([(context, TAIL)])[0]
    assert float(tail @ pooled) > float(tail @ truncated)
    for question in ("where do quick capture thoughts go? the inbox",
                     "is text typed into quick capture saved as a note?",
                     "which workspace gets my captured ideas"):
        query = embedder.embed_query(question)
        assert float(query @ pooled) > float(query @ truncated), question


def test_deterministic(embedder: Embedder) -> None:
    a = embedder.embed_passages([("T", FILLER * 10)])
    b = embedder.embed_passages([("T", FILLER * 10)])
    assert np.allclose(a, b, atol=1e-6)
