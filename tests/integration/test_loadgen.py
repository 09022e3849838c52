"""The load generator: loopback only, bounded, counts statuses and errors honestly."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from lab.loadgen import feedback_follow_up, percentile, require_loopback, run_load

SAFETY_S = 120.0


async def _server(status: bytes, body: bytes = b"ok") -> tuple[asyncio.Server, int, list[bytes]]:
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line[15:]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                seen.append(await reader.readexactly(length))
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: " + str(len(body)).encode()
                             + b"\r\n\r\n" + body)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], seen


async def test_posts_bodies_and_reports_latency() -> None:
    server, port, seen = await _server(b"200 OK")
    async with server:
        # Bounded by the request count; the duration is only a safety net a busy
        # machine cannot reach (the run ends as soon as 50 requests are done).
        report = await run_load(f"http://127.0.0.1:{port}", lambda i: {"query": f"q{i}"}, 4, SAFETY_S,
                                max_requests=50)
    assert report.requests == 50 and report.errors == 0 and report.status_counts == {200: 50}
    assert b'"query": "q0"' in seen[0] or b'"query":"q0"' in seen[0]
    assert 0 < report.p50_ms <= report.p95_ms <= report.p99_ms <= report.max_ms


async def test_5xx_and_refused_connections_are_errors() -> None:
    server, port, _ = await _server(b"503 Service Unavailable")
    async with server:
        report = await run_load(f"http://127.0.0.1:{port}", None, 2, SAFETY_S, "/health", max_requests=10)
    assert report.errors == 10 and report.status_counts == {503: 10}
    refused = await run_load(f"http://127.0.0.1:{port}", None, 1, SAFETY_S, max_requests=3)
    assert refused.errors == 3 and refused.status_counts == {0: 3}


async def test_the_soak_can_send_feedback_for_every_nth_answer() -> None:
    server, port, seen = await _server(b"200 OK", b'{"request_id": "req-7", "phase": 2}')
    async with server:
        report = await run_load(f"http://127.0.0.1:{port}", lambda i: {"query": f"q{i}"}, 1, SAFETY_S,
                                max_requests=10, follow_up=feedback_follow_up(5))
    feedback = [b for b in seen if b"verdict" in b]
    # Answers 0 and 5 are followed by feedback naming the answer's request id, verdicts cycled.
    assert len(feedback) == 2 and all(b'"request_id": "req-7"' in b for b in feedback)
    assert b'"helpful"' in feedback[0] and b'"not_what_i_meant"' in feedback[1]
    assert report.requests == 10 and report.follow_up_counts == {200: 2} and report.errors == 0


@pytest.mark.parametrize("url", ["http://10.0.0.5:8000", "http://example.com", "ftp://127.0.0.1"])
def test_refuses_anything_but_loopback(url: str) -> None:
    with pytest.raises(ValueError):
        require_loopback(url)


def test_nearest_rank_percentile() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 99)) == (50.0, 95.0, 99.0)
