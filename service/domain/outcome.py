"""What one retrieval request produced, as the pipeline reports it (no wire types).

`service/api` maps an `Outcome` to its response Structs; the query log,
metrics and the golden replay read it as it is.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

import msgspec

from service.domain.conversation import ConversationTrace
from service.domain.signals import DecisionSignals
from service.domain.types import Base, Decision, Evidence, Option

Status = Literal["answer", "clarify", "no_match", "disabled"]


class Tier(StrEnum):
    """Where an answer can come from, best first: one name in responses, metrics, logs."""

    phase3 = "phase3"
    phase2 = "phase2"
    phase1 = "phase1"
    cache = "cache"
    """The Tier-1 cache: glossary answers to explain-type questions (phase 0)."""
    generic = "generic"
    """No tier answered (or retrieval is disabled): the generic reply."""
    curation = "curation"
    """An operator's pin or hide changed the answer (named in fallback_path, never answers alone)."""

    @property
    def phase(self) -> int:
        """The phase number a tier answers as (0 for the cache and the generic reply)."""
        return PHASE_OF_TIER[self]

    @classmethod
    def of_phase(cls, phase: int) -> Tier:
        return {3: cls.phase3, 2: cls.phase2, 1: cls.phase1}[phase]


MAX_PHASE = 3

PHASE_OF_TIER: dict[Tier, int] = {
    Tier.phase3: 3, Tier.phase2: 2, Tier.phase1: 1, Tier.cache: 0, Tier.generic: 0, Tier.curation: 0,
}


class FallbackStep(Base, frozen=True):
    """A tier that was passed over, and why (failed, timed out, or skipped by routing)."""

    tier: Tier
    reason: str


class Outcome(Base, frozen=True):
    """One request's result: the decision, where it came from, and how it got there."""

    status: Status
    message: str
    decision: Decision | None
    """None for the generic reply (every tier failed, or retrieval is disabled)."""
    results: tuple[Evidence, ...]
    """The decision's evidence, cut to the request's top_k; each page and section once
    (service/respond.py `one_per_section`)."""
    tier: Tier
    phase: int
    """The phase that produced the answer (0: the Tier-1 cache or the generic reply)."""
    fallback_path: tuple[FallbackStep, ...]
    request_id: str
    latency_ms: float
    stats: dict[str, float | int] = msgspec.field(default_factory=dict)
    reason: str = ""
    """The decision's reason (e.g. `confident`, `small_gap`), or why there is none."""
    signals: DecisionSignals | None = None
    """What the answering tier decided from (`eval-decisions` / `fit-decisions` read it);
    None for the cache and the generic reply."""
    conversation: ConversationTrace | None = None
    """How history / ui_context / reply_to shaped the query (None: the request had none)."""

    @property
    def confidence(self) -> float:
        return self.decision.confidence if self.decision is not None else 0.0

    @property
    def options(self) -> tuple[Option, ...]:
        return self.decision.options if self.decision is not None else ()


class Route(Base, frozen=True):
    """The kill switch's verdict for one request: the highest phase it allows."""

    phase: int
    """0: retrieval disabled."""
    reason: str | None = None
    """Why `phase` is below the configured one, e.g. `kill switch: p95 612 ms > 500 ms over 300 s`."""
