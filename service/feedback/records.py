"""One query-log record: what a `/retrieve` or `/context` call asked and got.

Built on the request path from what the pipeline already holds (no I/O, a
few attribute reads); the writer stores it later, off the path.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from service.domain.types import NormalizedQuery

Endpoint = Literal["retrieve", "context"]

ENDPOINT: ContextVar[Endpoint] = ContextVar("query_log_endpoint", default="retrieve")
"""Set by a route that runs the pipeline for something other than /retrieve."""
CONVERSATION: ContextVar[dict[str, Any] | None] = ContextVar("query_log_conversation", default=None)
"""Conversation fields of the request, when it carried any (stored as JSONB)."""
TYPED: ContextVar[str | None] = ContextVar("query_log_typed", default=None)
"""The query text as the user typed it (set by the route): the conversation stage may search
another text (a carried topic, the question a reply answers), which `query` holds."""

TOP_RESULTS = 5
# Question-shaped queries ("how do I…"): the seed plan's phase 3 trigger is about them.
_QUESTION = re.compile(
    r"^\s*(how|what|where|why|when|which|who|can|could|do|does|is|are|should|will)\b|\?\s*$",
    re.IGNORECASE,
)


def is_question(text: str) -> bool:
    return _QUESTION.search(text) is not None


class _Scored(Protocol):
    doc_slug: str
    title: str
    header_path: str | None
    chunk_index: int | None
    score: float
    source: str

    @property
    def matched_terms(self) -> Sequence[str]: ...


class _Option(Protocol):
    doc_slug: str
    title: str
    category: str


class _Step(Protocol):
    @property
    def tier(self) -> str: ...

    @property
    def reason(self) -> str: ...


@dataclass(frozen=True)
class QueryRecord:
    request_id: str
    at: float
    """Wall-clock seconds (UTC epoch)."""
    endpoint: Endpoint
    query: str | None
    question: bool
    tokens: tuple[str, ...]
    unknown_tokens: tuple[str, ...]
    corrections: tuple[Any, ...]
    phase: int
    tier: str
    status: str
    reason: str
    confidence: float
    keyword_matched: bool | None
    results: tuple[Any, ...]
    """The pipeline's own (immutable) evidence objects: turned into JSON by the writer,
    off the request path (`results_json`)."""
    options: tuple[Any, ...]
    latency_ms: float
    fallback_path: tuple[Any, ...]
    conversation: dict[str, Any] | None = None
    typed: str | None = None
    """What the user typed, when the route said (None with `store_text` off)."""

    def results_json(self) -> list[dict[str, Any]]:
        return [{"doc_slug": r.doc_slug, "title": r.title, "header_path": r.header_path,
                 "chunk_index": r.chunk_index, "score": round(float(r.score), 4),
                 "matched_terms": list(r.matched_terms), "source": r.source} for r in self.results]

    def options_json(self) -> list[dict[str, Any]]:
        return [{"doc_slug": o.doc_slug, "title": o.title, "category": o.category} for o in self.options]

    def fallback_json(self) -> list[dict[str, str]]:
        return [{"tier": str(s.tier), "reason": s.reason} for s in self.fallback_path]

    def corrections_json(self) -> list[dict[str, Any]]:
        return [{"original": c.original, "corrected": c.corrected, "similarity": c.similarity}
                for c in self.corrections]


def keyword_matched(stats: Mapping[str, float | int]) -> bool | None:
    """Did the keyword leg score anything (the seed plan's "keyword match rate")?

    The same reading of the tiers' stats as the `keyword_matched_queries` metric."""
    if "keyword_candidates" in stats:
        return stats["keyword_candidates"] > 0
    if "top_score" in stats:
        return stats["top_score"] > 0
    return None


def build_record(
    query: NormalizedQuery | None,
    *,
    request_id: str,
    status: str,
    reason: str,
    phase: int,
    tier: str,
    confidence: float,
    results: Sequence[_Scored],
    options: Sequence[_Option],
    latency_ms: float,
    fallback: Sequence[_Step],
    stats: Mapping[str, float | int],
    store_text: bool,
    raw_query: str = "",
    clock: Any = time.time,
) -> QueryRecord:
    text = query.raw if query is not None else raw_query
    return QueryRecord(
        request_id=request_id,
        at=clock(),
        endpoint=ENDPOINT.get(),
        query=text if store_text else None,
        question=is_question(text),
        tokens=query.tokens if query is not None else (),
        unknown_tokens=query.unknown_tokens if query is not None else (),
        corrections=query.corrections if query is not None else (),
        phase=phase,
        tier=str(tier),
        status=status,
        reason=reason,
        confidence=float(confidence),
        keyword_matched=keyword_matched(stats),
        results=tuple(results[:TOP_RESULTS]),
        options=tuple(options),
        latency_ms=float(latency_ms),
        fallback_path=tuple(fallback),
        conversation=CONVERSATION.get(),
        typed=(TYPED.get() or text) if store_text else None,
    )
