"""OpenTelemetry metrics and traces; Prometheus text at `GET /metrics`; OTLP when configured.

One `Telemetry` per app (not the global providers), so several apps in one
process (tests, two replicas) keep their own figures.  Metrics go to a
Prometheus reader on a private registry (`metrics_text()`); with
`OTEL_EXPORTER_OTLP_ENDPOINT` set, metrics and spans are also pushed over
OTLP/HTTP (the exporters read the endpoint and headers from the standard
OTEL_* variables themselves).

Instruments (Prometheus names in brackets):
- histogram `retrieval_latency_ms` by phase and status [retrieval_latency_ms_*]
- counter `retrieval_decisions` by decision (answer/clarify/no_match/disabled)
- counter `retrieval_fallbacks` by tier (`domain.outcome.Tier`) and reason kind
  (`skipped`: a phase above the kill switch's or the flags' ceiling)
- counter `kill_switch_events` by kind (trip, recover, ...) and reason
- counter `retrieval_deduplicated_chunks` (the tiers' `stats["deduplicated"]`)
- counters `keyword_queries` / `keyword_matched_queries` (keyword match rate =
  matched / queries: queries whose keyword leg scored above 0)

Spans: `retrieve` (root) → `normalise`, `tier.<name>` per tier tried, `decide`.
With the HTTP instrumentation (app.py) each request's server span is their parent,
asyncpg's instrumentation adds a span per database call, and `/metrics` gains
`http_server_duration_milliseconds_*` per route template, method and status code.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import INVALID_SPAN_ID, INVALID_TRACE_ID, Span, Status, StatusCode
from prometheus_client import CollectorRegistry, generate_latest

from service.domain.outcome import Tier

log = logging.getLogger(__name__)

SERVICE_NAME = "doc-retrieval-service"
OTLP_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Milliseconds: phase 1 answers in well under a millisecond, phase 3 in tens.
LATENCY_BUCKETS_MS = (0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000)


class PrivateIdGenerator(IdGenerator):
    """Trace and span ids from a generator of our own. The SDK's default draws from the
    `random` module's global state, which background database calls (spans from the
    asyncpg instrumentation) would then advance at arbitrary moments under code that
    seeds or checks that state (Hypothesis in the API fuzz tests refuses to run so)."""

    def __init__(self) -> None:
        self._random = random.Random()  # seeded from os.urandom

    def generate_span_id(self) -> int:
        span_id = self._random.getrandbits(64)
        while span_id == INVALID_SPAN_ID:
            span_id = self._random.getrandbits(64)
        return span_id

    def generate_trace_id(self) -> int:
        trace_id = self._random.getrandbits(128)
        while trace_id == INVALID_TRACE_ID:
            trace_id = self._random.getrandbits(128)
        return trace_id

    def is_trace_id_random(self) -> bool:
        return True


class Telemetry:
    def __init__(self, *, environ: Mapping[str, str] | None = None, service_name: str = SERVICE_NAME) -> None:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader

        env = os.environ if environ is None else environ
        resource = Resource.create({"service.name": service_name})
        self.registry = CollectorRegistry(auto_describe=False)
        readers: list[MetricReader] = [
            PrometheusMetricReader(registry=self.registry, scope_info_enabled=False)
        ]
        self.otlp = bool(env.get(OTLP_ENV, "").strip())
        # Without an exporter nobody reads recorded spans: sample none. Unsampled
        # spans still carry a fresh trace id (for the query log) and cost a
        # fraction of recorded ones. OTEL_TRACES_SAMPLER, when set, decides.
        sampler = None if self.otlp or env.get("OTEL_TRACES_SAMPLER") else ALWAYS_OFF
        self.tracer_provider = TracerProvider(resource=resource, sampler=sampler, id_generator=PrivateIdGenerator())
        if self.otlp:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
            self.tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            log.info("exporting metrics and traces over OTLP to %s", env[OTLP_ENV])
        self.meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        meter = self.meter_provider.get_meter("service")
        self.tracer = self.tracer_provider.get_tracer("service")
        self.latency = meter.create_histogram(
            # No `unit`: the Prometheus exporter would append `_milliseconds`
            # to a name that already says `_ms`.
            "retrieval_latency_ms",
            description="Query received → response built (milliseconds), by phase and status",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS_MS,
        )
        self.decisions = meter.create_counter("retrieval_decisions", description="Responses by decision")
        self.fallbacks = meter.create_counter("retrieval_fallbacks", description="Tiers passed over, by tier and reason")
        self.kill_switch = meter.create_counter("kill_switch_events", description="Kill-switch trips and recoveries")
        self.deduplicated = meter.create_counter(
            "retrieval_deduplicated_chunks", description="Chunks dropped by per-document de-duplication")
        self.keyword_queries = meter.create_counter(
            "keyword_queries", description="Queries whose keyword leg ran")
        self.keyword_matched = meter.create_counter(
            "keyword_matched_queries", description="Queries whose keyword leg scored above 0")
        self._attrs: dict[tuple[int, str], dict[str, Any]] = {}

    # -- traces -----------------------------------------------------------------
    def instrument_database(self) -> None:
        """Spans for asyncpg calls. The instrumentation patches asyncpg for the whole
        process, so the first app's tracer provider gets them (one app per process
        in production; test processes that host several apps share it)."""
        from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor

        instrumentor = AsyncPGInstrumentor()  # type: ignore[no-untyped-call]
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument(tracer_provider=self.tracer_provider)

    @contextlib.contextmanager
    def span(self, name: str) -> Iterator[Span]:
        with self.tracer.start_as_current_span(name, record_exception=False,
                                               set_status_on_exception=False) as span:
            yield span

    @staticmethod
    def trace_id(span: Span) -> str:
        trace_id = span.get_span_context().trace_id
        return format(trace_id, "032x") if trace_id else ""

    @staticmethod
    def mark_error(span: Span, reason: str) -> None:
        span.set_status(Status(StatusCode.ERROR, reason))

    # -- metrics ----------------------------------------------------------------
    def observe(self, *, phase: int, status: str, latency_ms: float,
                fallbacks: Sequence[tuple[Tier, str]], stats: Mapping[str, float | int]) -> None:
        """One finished request (cheap: a few dictionary look-ups and adds)."""
        key = (phase, status)
        attrs = self._attrs.get(key)
        if attrs is None:
            attrs = self._attrs[key] = {"phase": str(phase), "status": status}
        self.latency.record(latency_ms, attrs)
        self.decisions.add(1, {"decision": status})
        for tier, kind in fallbacks:
            self.fallbacks.add(1, {"tier": tier.value, "reason": kind})
        deduplicated = stats.get("deduplicated")
        if deduplicated:
            self.deduplicated.add(int(deduplicated))
        matched: bool | None = None
        if "keyword_candidates" in stats:
            matched = stats["keyword_candidates"] > 0
        elif "top_score" in stats:
            matched = stats["top_score"] > 0
        if matched is not None:
            self.keyword_queries.add(1)
            if matched:
                self.keyword_matched.add(1)

    def kill_switch_event(self, kind: str, reason: str) -> None:
        self.kill_switch.add(1, {"kind": kind, "reason": reason})

    def metrics_text(self) -> bytes:
        return generate_latest(self.registry)

    def shutdown(self) -> None:
        for provider in (self.meter_provider, self.tracer_provider):
            try:
                provider.shutdown()
            except Exception:  # exporting at exit must never break shutdown
                log.warning("telemetry shutdown failed", exc_info=True)


@contextlib.contextmanager
def optional_span(telemetry: Telemetry | None, name: str) -> Iterator[Span | None]:
    """A span when telemetry is on (the service), none when off (tests, the lab's runs)."""
    if telemetry is None:
        yield None
        return
    with telemetry.span(name) as span:
        yield span


def current_trace_id(telemetry: Telemetry | None) -> str | None:
    """The current request's trace id (None when telemetry is off)."""
    if telemetry is None:
        return None
    from opentelemetry import trace

    return telemetry.trace_id(trace.get_current_span())
