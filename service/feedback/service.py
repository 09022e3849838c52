"""The operator loop of one replica: the query-log writer and what the routes need."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from service.domain.types import NormalizedQuery
from service.feedback.log_writer import QueryLogWriter
from service.feedback.metrics import FeedbackMetrics
from service.feedback.records import build_record
from service.flags import Flags

log = logging.getLogger(__name__)

FEEDBACK_KEY = "feedback"


@dataclass
class Feedback:
    writer: QueryLogWriter
    metrics: FeedbackMetrics
    flags: Callable[[], Flags]
    pages: Callable[[], Sequence[str]] = field(default=lambda: ())
    """Slugs of the corpus being served (export and review check pages against it)."""

    def observe_outcome(self, query: NormalizedQuery, outcome: Any) -> None:
        """The pipeline's `QueryObserver`: an answered request as the pipeline reports it."""
        self.observe(query, outcome, reason=outcome.reason or "all_tiers_failed", tier=outcome.tier.value,
                     stats=outcome.stats)

    def observe(self, query: NormalizedQuery | None, outcome: Any, *, reason: str, tier: str,
                stats: dict[str, float | int]) -> None:
        """One answered request → one queued record. Never raises into the request."""
        try:
            record = build_record(
                query, request_id=outcome.request_id, status=outcome.status, reason=reason,
                phase=outcome.phase, tier=tier, confidence=outcome.confidence, results=outcome.results,
                options=outcome.options, latency_ms=outcome.latency_ms, fallback=outcome.fallback_path,
                stats=stats, store_text=self.flags().query_log.store_text,
            )
            self.writer.submit(record)
        except Exception:  # the log is a by-product: a bug here must not fail the answer
            log.exception("query log: could not record request")


def build_feedback(
    pool: Callable[[], asyncpg.Pool[Any] | None], flags: Callable[[], Flags], meter_provider: Any | None,
    pages: Callable[[], Sequence[str]],
) -> Feedback:
    metrics = FeedbackMetrics(meter_provider)
    return Feedback(writer=QueryLogWriter(pool, flags, metrics), metrics=metrics, flags=flags, pages=pages)
