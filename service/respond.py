"""An answered tier → the request's `Outcome`, and the one log line each request leaves."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

import msgspec

from service.decide import clarify
from service.domain.candidates import Candidates
from service.domain.outcome import FallbackStep, Outcome, Status, Tier
from service.domain.signals import DecisionSignals
from service.domain.types import Answer, Clarify, Decision, NoMatch, NormalizedQuery

log = logging.getLogger("service.query")


@dataclass(frozen=True)
class TierOutcome:
    """The tier that answered, what it retrieved and what was decided on it."""

    tier: Tier
    decision: Decision
    candidates: Candidates
    signals: DecisionSignals | None

    @property
    def phase(self) -> int:
        return self.candidates.phase


def with_anchors(outcome: Outcome, anchors: Mapping[tuple[str, int], str]) -> Outcome:
    """Each chunk result with its heading's URL fragment (the UI opens that section)."""
    if not anchors or not outcome.results:
        return outcome
    results = tuple(
        msgspec.structs.replace(e, anchor=anchors.get((e.doc_slug, e.chunk_index), ""))
        if e.chunk_index is not None else e
        for e in outcome.results
    )
    return msgspec.structs.replace(outcome, results=results)


def elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def generic(
    status: Status, request_id: str, started: float, fallback: tuple[FallbackStep, ...], reason: str
) -> Outcome:
    return Outcome(
        status=status, message=clarify.GENERIC, decision=None, results=(), tier=Tier.generic, phase=0,
        fallback_path=fallback, request_id=request_id, latency_ms=elapsed_ms(started), reason=reason,
    )


def outcome_of(
    answered: TierOutcome | None,
    top_k: int,
    fallback: tuple[FallbackStep, ...],
    request_id: str,
    started: float,
) -> Outcome:
    """The evidence shown is completed by the tier's `explained` (snippets only for those)."""
    if answered is None:
        return generic("no_match", request_id, started, fallback, "all_tiers_failed")
    decision = answered.decision
    explained = answered.candidates.explained
    if explained is not None and decision.results:
        shown = tuple(explained(e) for e in decision.results[: top_k])
        decision = msgspec.structs.replace(decision, results=(*shown, *decision.results[top_k :]))
    status: Status
    match decision:
        case Answer():
            status = "answer"
        case Clarify():
            status = "clarify"
        case NoMatch():
            status = "no_match"
    return Outcome(
        status=status, message=decision.message, decision=decision, results=decision.results[: top_k],
        tier=answered.tier, phase=answered.phase, fallback_path=fallback, request_id=request_id,
        latency_ms=elapsed_ms(started), stats=answered.candidates.stats, reason=decision.reason,
        signals=answered.signals,
    )


def log_query(query: NormalizedQuery, outcome: Outcome, trace_id: str | None = None) -> None:
    """One structured record per call (seed plan: "Logging per query")."""
    if not log.isEnabledFor(logging.INFO):
        return
    record = {
        "event": "retrieve",
        "request_id": outcome.request_id,
        "trace_id": trace_id,
        "query": query.raw,
        "tokens": list(query.tokens),
        "query_type": query.query_type,
        "corrections": [msgspec.to_builtins(c) for c in query.corrections],
        "top": [
            {"slug": e.doc_slug, "chunk": e.chunk_index, "score": round(e.score, 4), "matched_terms": list(e.matched_terms)}
            for e in outcome.results[:3]
        ],
        "confidence": outcome.confidence,
        "action": outcome.status,
        "reason": outcome.reason,
        "latency_ms": outcome.latency_ms,
        "phase": outcome.phase,
        "tier": outcome.tier.value,
        "fallback": [f"{s.tier}: {s.reason}" for s in outcome.fallback_path],
        "stats": outcome.stats,
    }
    log.info(json.dumps(record, ensure_ascii=False))
