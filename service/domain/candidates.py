"""What a tier hands the decision: its ranking and the signals a decision needs (pure data).

Tiers (service/tiers.py) retrieve and never decide; the one `Decider`
(service/decide/decider.py) turns `Candidates` into an answer, a question or no match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from service.domain.signals import SemanticSignal
from service.domain.types import Evidence


@dataclass(frozen=True)
class Candidates:
    """One tier's retrieval for one query."""

    phase: int
    """1-3, or 0 for the Tier-1 cache."""
    ranking: Sequence[Evidence]
    """Best first: phase 1 pages, phase 2 chunks (at most `max_chunks_per_doc` per page unless
    the query is multi-intent), phase 3 the fused ranking."""
    parts: tuple[Sequence[Evidence], ...] = ()
    """A multi-intent query's parts, each searched alone on the keyword index (phase 3: the
    chunk index, as phase 2 searches it)."""
    keyword: Sequence[Evidence] | None = None
    """Phase 3's keyword leg as phase 2 would rank it (de-duplicated the same way)."""
    semantic: SemanticSignal | None = None
    """Phase 3: how close the nearest neighbour is."""
    page_similarity: Mapping[str, float] = field(default_factory=dict)
    """Phase 3: each page's best cosine."""
    whole_pages: tuple[str, ...] = ()
    """Phases 2 and 3: the first pages phase 1 ranks for the query (the keyword index over whole
    pages, best first, at most ten): where this ranking's first page stands there is a decision
    signal (`calibration.FEATURES`' `whole_page_rank`)."""
    is_stub: Callable[[str], bool] | None = None
    """Pages marked stub at seed (nothing of their own to say): never named by their title alone."""
    pinned: frozenset[str] = frozenset()
    """The pages a name of the query pins down (`CorpusIndexes.pinned_pages`): a first page among
    them is answered though p alone would ask (`calibration.decide_calibrated`)."""
    stats: dict[str, float | int] = field(default_factory=dict)
    explained: Callable[[Evidence], Evidence] | None = None
    """Adds snippet and `match_explain` to the evidence shown (ranking and deciding use numbers
    only: building text for every candidate was most of phases 2 and 3's CPU)."""
