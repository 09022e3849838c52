"""What the semantic leg tells phase 3's decision (pure data, no scoring code)."""

from __future__ import annotations

from service.domain.types import Base


class SemanticSignal(Base, frozen=True):
    """How close the nearest neighbour is, and by how much it beats other pages."""

    top_similarity: float
    margin: float
    top_doc: str | None


class DecisionSignals(Base, frozen=True):
    """What a tier's decision was made from, whichever policy made it (eval / fit read it)."""

    features: dict[str, float]
    """`decide.calibration.FEATURES` of the ranking."""
    ranking: tuple[str, ...]
    """Distinct pages by score, best first (at most 10)."""
    pinned: tuple[str, ...] = ()
    """The pages a name of the query pins down (`Candidates.pinned`, sorted): the replay of the
    decision needs them (`decider.replayed_status`)."""
    semantic_ranking: tuple[str, ...] = ()
    """Phase 3: the semantic leg alone, pages by their best chunk's cosine (at most 10); what the
    fusion is measured against (`eval-decisions --cross-corpus`)."""
