"""Load figures say what ran: the answering phase per row, a warning when the
run was capped, and percentiles of the raw latencies (merged runs too)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from lab.loadgen import LoadReport, _merge, run_load
from service.stats import percentile


async def _retrieve_server(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> tuple[asyncio.Server, int]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line[15:]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                body = json.dumps(answer(json.loads(await reader.readexactly(length)))).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_a_phase_three_run_answered_by_phase_one_is_labelled_and_warned() -> None:
    # What DOC_RETRIEVAL_PHASE=1 does: every answer from phase 1, no fallback.
    server, port = await _retrieve_server(lambda _body: {"phase": 1, "fallback_path": []})
    async with server:
        report = await run_load(f"http://127.0.0.1:{port}", lambda i: {"query": f"q{i}", "phase": 3}, 2, 5.0,
                                max_requests=20)
    assert report.answered_by == {1: 20} and report.answered() == "phase 1 100%"
    assert "answered: phase 1 100%" in report.line("/retrieve cap 3")
    [warning] = report.warnings(3)
    assert "every answer came from phase 1 with no fallback" in warning and "kill switch" in warning


async def test_fallbacks_are_counted_with_their_reason() -> None:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        if body["query"].endswith(("0", "5")):
            return {"phase": 2, "fallback_path": [
                {"tier": "phase3", "reason": "embedding queue full: ~412 ms wait > 250 ms"}]}
        return {"phase": 3, "fallback_path": []}

    server, port = await _retrieve_server(answer)
    async with server:
        report = await run_load(f"http://127.0.0.1:{port}", lambda i: {"query": f"q{i}"}, 1, 5.0, max_requests=20)
    assert report.answered_by == {3: 16, 2: 4} and report.fell_back == 4
    assert report.fallback_reasons == {"phase3: embedding queue full: ~N ms wait > N ms": 4}
    assert report.warnings(3) == ["4 of 20 fell back (phase3: embedding queue full: ~N ms wait > N ms ×4)"]


def _report(latencies: list[float]) -> LoadReport:
    return LoadReport(path="/retrieve", concurrency=1, duration_s=1.0, requests=len(latencies), errors=0,
                      status_counts={200: len(latencies)}, rps=0, p50_ms=percentile(latencies, 50),
                      p95_ms=percentile(latencies, 95), p99_ms=percentile(latencies, 99),
                      max_ms=max(latencies), latencies_ms=latencies)


def test_merged_runs_take_percentiles_of_all_raw_latencies_not_an_average() -> None:
    fast = _report([1.0] * 90)
    slow = _report([100.0] * 10)
    merged = _merge([fast, slow])
    # The old request-weighted mean of per-run p95s said 10.9 ms; 10 % of the
    # requests took 100 ms, so the p95 is 100 ms.
    assert merged.p95_ms == 100.0 and merged.p50_ms == 1.0 and merged.requests == 100
    assert "latencies_ms" not in merged.summary()
