"""Vectors kept by model and exact input (service/embedding/vector_cache.py) and the
evaluations' embedder in front of them (service/evaluation/cache.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from service.embedding.vector_cache import VectorCache, kept_for, known_vectors
from service.evaluation.cache import CachedEmbedder


def test_a_vector_comes_back_for_its_model_and_input_only(tmp_path: Path) -> None:
    mini = VectorCache(tmp_path, "all-MiniLM-L6-v2", 3)
    mini.put(["a", "b"], np.array([[1, 0, 0], [0, 1, 0]], dtype=np.float32))
    assert set(mini.get(["a", "b", "c"])) == {"a", "b"}
    assert np.array_equal(mini.get(["b"])["b"], np.array([0, 1, 0], dtype=np.float32))
    # Another model, or the same name at another dimension, never sees them.
    assert VectorCache(tmp_path, "all-mpnet-base-v2", 3).get(["a"]) == {}
    assert VectorCache(tmp_path, "all-MiniLM-L6-v2", 4).get(["a"]) == {}


def test_a_damaged_row_is_a_miss_not_a_wrong_vector(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path, "m", 3)
    cache.put(["a"], np.ones((1, 3), dtype=np.float32))
    with sqlite3.connect(cache.path) as conn:
        conn.execute("update vectors set vector = ? where input_hash = 'a'", (b"\x00\x01",))
    assert cache.get(["a"]) == {}


def test_the_flag_and_the_directory(tmp_path: Path) -> None:
    assert known_vectors(tmp_path, "m", 3, enabled=False) is None
    beside = known_vectors(tmp_path, "m", 3, enabled=True, env={})
    assert beside is not None and beside.path.parent == tmp_path / "vectors"
    chosen = known_vectors(tmp_path, "m", 3, enabled=True, env={"EMBEDDING_VECTORS_DIR": str(tmp_path / "v")})
    assert chosen is not None and chosen.path.parent == tmp_path / "v"


def test_vectors_from_an_embedding_server_are_not_kept(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("EMBEDDING_VECTORS_DIR", raising=False)
    local, server = Counting(), object()
    kept = kept_for(tmp_path, local, local, keep=True)  # type: ignore[arg-type]
    assert kept is not None and kept.path.parent == tmp_path / "vectors" and kept.dim == 2
    assert kept_for(tmp_path, local, server, keep=True) is None  # type: ignore[arg-type]
    assert kept_for(tmp_path, local, local, keep=False) is None  # type: ignore[arg-type]


class Counting:
    model_name = "m"
    dim = 2

    def __init__(self) -> None:
        self.calls = 0

    def embed_passages(self, items: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        self.calls += len(items)
        return np.array([[len(c), len(t)] for c, t in items], dtype=np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        self.calls += 1
        return np.array([0, len(text)], dtype=np.float32)


def test_the_evaluations_embed_each_input_once_across_runs(tmp_path: Path) -> None:
    inner = Counting()
    first = CachedEmbedder(inner, tmp_path).embed_passages([("ctx", "one"), ("c", "three")])
    again = CachedEmbedder(inner, tmp_path).embed_passages([("c", "three"), ("ctx", "one"), ("", "new")])
    assert inner.calls == 3 and np.array_equal(again[:2], first[::-1])
    # A query with a passage's text is another input.
    CachedEmbedder(inner, tmp_path).embed_query("one")
    assert inner.calls == 4
