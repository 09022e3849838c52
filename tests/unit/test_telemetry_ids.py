"""Span ids never touch the `random` module's global state (see telemetry.PrivateIdGenerator)."""

import random

from service.telemetry import Telemetry


def test_spans_leave_the_global_random_state_alone() -> None:
    telemetry = Telemetry(environ={"OTEL_TRACES_SAMPLER": "always_on"})
    random.seed(1234)
    before = random.getstate()
    ids = set()
    for _ in range(50):
        with telemetry.span("work") as span:
            ids.add((span.get_span_context().trace_id, span.get_span_context().span_id))
    assert random.getstate() == before
    assert len(ids) == 50 and all(trace and span for trace, span in ids)
