"""The sentence-vector experiment's semantic leg (lab/experiments/sentence_vectors.py): a chunk
scores by its best vector, ties in page order, and a category filter keeps other pages out."""

from __future__ import annotations

from typing import Any

import numpy as np

from lab.experiments.sentence_vectors import InMemoryLeg
from service.domain.types import Chunk


class AxisEmbedder:
    """A query is the unit vector of its first axis: enough to aim at one stored vector."""

    def embed_query(self, text: str) -> Any:
        return np.array([1.0, 0.0, 0.0], dtype=np.float32) if text == "x" else np.array([0.0, 1.0, 0.0], dtype=np.float32)


def chunk(slug: str, category: str) -> Chunk:
    return Chunk(doc_slug=slug, chunk_index=0, category=category, title=slug, header_path=slug, content="c",
                 keywords=(), chunk_hash=slug, token_count=1)


async def test_a_chunk_scores_by_its_best_vector() -> None:
    chunks = [chunk("a/one", "a"), chunk("b/two", "b")]
    # Chunk 0: body far from "x"; chunk 1: body mid-way; one sentence of chunk 0 points at "x".
    vectors = np.array([[0.0, 0.0, 1.0], [0.6, 0.8, 0.0], [1.0, 0.0, 0.0]], dtype=np.float32)
    leg = InMemoryLeg(AxisEmbedder(), chunks, vectors, np.array([0, 1, 0]))
    hits, _ = await leg.search("x", 5, None, None)
    assert [(h.doc_slug, round(h.similarity, 2)) for h in hits] == [("a/one", 1.0), ("b/two", 0.6)]
    only_b, _ = await leg.search("x", 5, "b", None)
    assert [h.doc_slug for h in only_b] == ["b/two"]
