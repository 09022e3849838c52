"""`python -m lab bench --telemetry`: what the HTTP and database instrumentation costs.

Two apps on one freshly seeded database, identical but for `http_telemetry`
(OpenTelemetry's ASGI middleware and asyncpg instrumentation, app.py), answer
the same golden queries in alternating rounds through Litestar's in-process
ASGI client, so machine noise lands on both alike. Phase 2 runs from memory;
phase 3 (query vectors cached after the first round) adds a pgvector search,
i.e. database calls that the asyncpg instrumentation wraps. Figures: median
per-request latency per mode and phase, and the on/off ratio of the medians.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from service.settings import Settings
from service.stats import summary

PHASES = (2, 3)


@contextlib.asynccontextmanager
async def _client(settings: Settings) -> AsyncIterator[Any]:
    from litestar.testing import AsyncTestClient

    from service.app import create_app
    from service.readiness import http_get, wait_until_ready

    async with AsyncTestClient(app=create_app(settings), timeout=120) as client:
        await wait_until_ready(http_get(client), timeout_s=600)
        yield client


async def _round(client: Any, queries: list[str], phase: int) -> list[float]:
    took: list[float] = []
    for query in queries:
        start = time.perf_counter()
        response = await client.post("/retrieve", json={"query": query, "phase": phase})
        took.append((time.perf_counter() - start) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"/retrieve answered {response.status_code}: {response.text[:200]}")
    return took


async def overhead(dsn: str, settings: Settings, queries: list[str], rounds: int) -> dict[str, Any]:
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor

    from service.operations import OPS_KEY

    base = settings.with_overrides(database_url=dsn)
    latencies: dict[tuple[str, int], list[float]] = {}
    async with _client(base.with_overrides(http_telemetry=True)) as on, \
            _client(base.with_overrides(http_telemetry=False)) as off:
        instrumentor = AsyncPGInstrumentor()  # type: ignore[no-untyped-call]
        provider = on.app.state[OPS_KEY].telemetry.tracer_provider
        for phase in PHASES:  # warm-up: model, query-vector cache, connections
            await _round(on, queries, phase)
            await _round(off, queries, phase)
        for _ in range(rounds):
            for mode, client in (("on", on), ("off", off)):
                # asyncpg's instrumentation is process-wide: bound only while "on" runs.
                if mode == "on" and not instrumentor.is_instrumented_by_opentelemetry:
                    instrumentor.instrument(tracer_provider=provider)
                if mode == "off" and instrumentor.is_instrumented_by_opentelemetry:
                    instrumentor.uninstrument()
                for phase in PHASES:
                    latencies.setdefault((mode, phase), []).extend(await _round(client, queries, phase))
    result: dict[str, Any] = {"queries": len(queries), "rounds": rounds, "phases": {}}
    for phase in PHASES:
        on_ms, off_ms = summary(latencies[("on", phase)]), summary(latencies[("off", phase)])
        result["phases"][str(phase)] = {
            "on": on_ms, "off": off_ms,
            "ratio_p50": round(on_ms["p50"] / off_ms["p50"], 3) if off_ms["p50"] else None,
        }
    return result


def table(result: dict[str, Any]) -> str:
    lines = [
        f"Instrumentation cost ({result['queries']} golden queries x {result['rounds']} rounds per mode,"
        " in-process ASGI client, modes alternating):", "",
        "| phase | p50 on (ms) | p50 off (ms) | p95 on (ms) | p95 off (ms) | p50 on/off |",
        "|---|---|---|---|---|---|",
    ]
    for phase, row in result["phases"].items():
        lines.append(f"| {phase} | {row['on']['p50']} | {row['off']['p50']} | {row['on']['p95']} |"
                     f" {row['off']['p95']} | {row['ratio_p50']} |")
    return "\n".join(lines) + "\n"


def write(out_dir: Path, result: dict[str, Any]) -> str:
    import json

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "telemetry.json").write_text(json.dumps(result, indent=2) + "\n")
    text = table(result)
    (out_dir / "telemetry.md").write_text(text)
    return text
