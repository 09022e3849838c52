"""An answered tier → the request's `Outcome`, and the one log line each request leaves.

The results shown name each page and section once: a tier ranks chunks, and two chunks of one
section (a long section cut in two, or the same chunk reached twice by a decision's own
reordering) would send a reader to the same place twice; the lower one merges into the first.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import msgspec

from service.decide import clarify
from service.domain.candidates import Candidates
from service.domain.outcome import FallbackStep, Outcome, Status, Tier
from service.domain.signals import DecisionSignals
from service.domain.types import Answer, Clarify, Decision, Evidence, NoMatch, NormalizedQuery

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


Anchors = Mapping[tuple[str, int], str]
"""(doc_slug, chunk_index) → the chunk's heading as a URL fragment."""


def one_per_section(
    results: Sequence[Evidence], top_k: int, anchors: Anchors,
    explained: Callable[[Evidence], Evidence] | None = None,
) -> tuple[list[Evidence], int]:
    """The first `top_k` distinct (page, anchor) of `results`, in their order, each explained
    and carrying its heading's anchor (the UI opens that section); a later chunk of a section
    already shown merges into it. Returns them and how many of `results` they took."""
    shown: list[Evidence] = []
    at: dict[tuple[str, str], int] = {}
    taken = 0
    for evidence in results:
        if len(shown) >= top_k:
            break
        taken += 1
        if explained is not None:
            evidence = explained(evidence)
        if evidence.chunk_index is not None and anchors:
            evidence = msgspec.structs.replace(evidence, anchor=anchors.get((evidence.doc_slug, evidence.chunk_index), ""))
        key = (evidence.doc_slug, evidence.anchor or "")
        if key in at:
            shown[at[key]] = _merged(shown[at[key]], evidence)
        else:
            at[key] = len(shown)
            shown.append(evidence)
    return shown, taken


def _merged(first: Evidence, later: Evidence) -> Evidence:
    """`first` with what `later`, a lower result of the same section, adds: its matched terms."""
    also = f"chunk {later.chunk_index}" if later.chunk_index is not None and later.chunk_index != first.chunk_index \
        else "the same passage again"
    return msgspec.structs.replace(
        first, matched_terms=tuple(dict.fromkeys((*first.matched_terms, *later.matched_terms))),
        match_explain=(*first.match_explain, f"merged: {also} of this section (score {later.score:.4g})"),
    )


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
    anchors: Anchors | None = None,
) -> Outcome:
    """The evidence shown is completed by the tier's `explained` (snippets only for those), one
    result per page and section (`one_per_section`)."""
    if answered is None:
        return generic("no_match", request_id, started, fallback, "all_tiers_failed")
    decision = answered.decision
    if decision.results:
        shown, taken = one_per_section(decision.results, top_k, anchors or {}, answered.candidates.explained)
        decision = msgspec.structs.replace(decision, results=(*shown, *decision.results[taken:]))
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
