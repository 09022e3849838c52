"""The operator loop's instruments, on the app's own meter provider (so /metrics shows them)."""

from __future__ import annotations

from typing import Any


class FeedbackMetrics:
    """`query_log_written_total`, `query_log_dropped_total{reason}`, `retrieval_feedback_total{verdict}`."""

    def __init__(self, meter_provider: Any | None) -> None:
        self.enabled = meter_provider is not None
        if meter_provider is None:
            return
        meter = meter_provider.get_meter("service.feedback")
        self._written = meter.create_counter("query_log_written", description="Query-log records stored")
        self._dropped = meter.create_counter(
            "query_log_dropped",
            description="Query-log records dropped (queue_full: the writer fell behind; db_error: not stored)",
        )
        self._feedback = meter.create_counter("retrieval_feedback", description="Feedback received, by verdict")

    def written(self, count: int) -> None:
        if self.enabled and count:
            self._written.add(count)

    def dropped(self, reason: str, count: int) -> None:
        if self.enabled and count:
            self._dropped.add(count, {"reason": reason})

    def feedback(self, verdict: str) -> None:
        if self.enabled:
            self._feedback.add(1, {"verdict": verdict})
