"""What the semantic leg tells phase 3's decision (pure data, no scoring code)."""

from __future__ import annotations

from service.domain.types import Base


class SemanticSignal(Base, frozen=True):
    """How close the nearest neighbour is, and by how much it beats other pages."""

    top_similarity: float
    margin: float
    top_doc: str | None
