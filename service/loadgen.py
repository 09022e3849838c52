"""A loopback HTTP load generator and the `python -m service load` benchmark.

`run_load` keeps `concurrency` requests in flight against one path for
`duration_s` seconds (and at most `max_requests`), each worker on one raw
keep-alive connection, and reports throughput, latency percentiles and errors.
It refuses any host that is not loopback: this is a benchmark for a service
on this machine, never a tool to point at someone else's server.

The CLI runs, in order: `/health` (to show the generator is not the
bottleneck: its rate is far above `/retrieve`'s), `/retrieve` at each phase,
and optionally a soak of `--soak-minutes` minutes with the server's resident
memory (RSS, via psutil on `--pid` or the process listening on the port)
measured before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

MAX_CONCURRENCY = 512
MAX_DURATION_S = 3600.0
MAX_REQUESTS = 2_000_000
REQUEST_TIMEOUT_S = 30.0
SOAK_REPORT_EVERY_S = 60.0
ALLOWED_GROWTH_PERCENT = 10.0

BodyFactory = Callable[[int], dict[str, Any]]

# Realistic traffic: the golden navigation queries (answers, clarifications,
# no-matches, typos, multi-intent), cycled.
QUERIES = (
    "explain workspace", "what is home", "explain calendar", "home", "shortcuts", "wrkspace",
    "workspace and widgets", "how do I do it", "the thing", "tell me about panels",
    "breadcrumb tooltip", "explain notes", "what is quick links", "open notes + quick links",
    "explain dashboard", "what is an entry", "what are widgets?", "navigator", "recent",
    "quick capture", "widget manager", "homepage", "bookmarks", "navigatr", "billing",
    "how do I find my notes?", "where are my shortcuts?", "recover deleted note",
    "how can I see which notes link here?", "pick up where I left off",
)


@dataclass(frozen=True)
class LoadReport:
    path: str
    concurrency: int
    duration_s: float
    requests: int
    errors: int
    """Transport failures (refused, reset, timeout) plus 5xx responses."""
    status_counts: dict[int, int]
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float

    def line(self, label: str) -> str:
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(self.status_counts.items()))
        return (
            f"{label:<18} {self.requests:>8} req {self.rps:>9.1f} rps  "
            f"p50 {self.p50_ms:>7.2f}  p95 {self.p95_ms:>7.2f}  p99 {self.p99_ms:>7.2f} ms  "
            f"errors {self.errors}  [{statuses}]"
        )


def percentile(sorted_ms: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an ascending list; 0.0 if empty."""
    if not sorted_ms:
        return 0.0
    rank = max(1, math.ceil(q / 100 * len(sorted_ms)))
    return round(sorted_ms[rank - 1], 3)


def require_loopback(url: str) -> str:
    """Return the URL without a trailing slash; ValueError unless its host is loopback."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    host = parts.hostname
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(
                f"refusing non-loopback host {host!r}: the load generator only targets "
                "127.0.0.0/8, ::1 or localhost"
            )
    return url.rstrip("/")


def _request_bytes(host: str, path: str, body: dict[str, Any] | None) -> bytes:
    if body is None:
        return f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


async def _read_response(reader: asyncio.StreamReader) -> int:
    """Read one HTTP/1.1 response (Content-Length framed); return its status."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("connection closed by the server")
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        if line[:15].lower() == b"content-length:":
            length = int(line[15:].strip())
    await reader.readexactly(length)
    return int(status_line[9:12])


async def run_load(
    url: str,
    make_body: BodyFactory | None,
    concurrency: int,
    duration_s: float,
    path: str = "/retrieve",
    *,
    max_requests: int = MAX_REQUESTS,
    timeout_s: float = REQUEST_TIMEOUT_S,
) -> LoadReport:
    """Hold `concurrency` requests in flight for `duration_s` (or `max_requests`).

    `make_body(i)` gives the JSON body of the i-th request (POST); with
    `make_body=None` the requests are GETs (e.g. `/health`).  Each worker
    keeps one HTTP/1.1 keep-alive connection and writes pre-encoded request
    bytes: an HTTP client library costs more CPU per request than the
    service's own cheapest endpoint, and on 2 cores that would measure the
    client, not the server.
    """
    base = require_loopback(url)
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValueError(f"concurrency must be 1..{MAX_CONCURRENCY}")
    if not 0 < duration_s <= MAX_DURATION_S:
        raise ValueError(f"duration must be in (0, {MAX_DURATION_S:.0f}] seconds")
    max_requests = max(1, min(max_requests, MAX_REQUESTS))
    parts = urlsplit(base)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80

    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    errors = 0
    issued = 0
    started = time.perf_counter()
    deadline = started + duration_s

    async def worker() -> None:
        nonlocal errors, issued
        connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while time.perf_counter() < deadline and issued < max_requests:
                i = issued
                issued += 1
                raw = _request_bytes(host, path, None if make_body is None else make_body(i))
                t0 = time.perf_counter()
                try:
                    if connection is None:
                        connection = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
                    reader, writer = connection
                    writer.write(raw)
                    status = await asyncio.wait_for(_read_response(reader), timeout_s)
                except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError):
                    errors += 1
                    statuses[0] += 1  # 0: no HTTP response at all
                    if connection is not None:
                        connection[1].close()
                    connection = None
                    continue
                latencies.append((time.perf_counter() - t0) * 1000)
                statuses[status] += 1
                if status >= 500:
                    errors += 1
        finally:
            if connection is not None:
                connection[1].close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))

    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    total = sum(statuses.values())
    return LoadReport(
        path=path, concurrency=concurrency, duration_s=round(elapsed, 3), requests=total,
        errors=errors, status_counts=dict(statuses), rps=round(total / elapsed, 1) if elapsed else 0.0,
        p50_ms=percentile(ordered, 50), p95_ms=percentile(ordered, 95),
        p99_ms=percentile(ordered, 99), max_ms=round(ordered[-1], 3) if ordered else 0.0,
    )


def retrieve_body(phase: int | None, unique: bool = False) -> BodyFactory:
    """Bodies for /retrieve cycling QUERIES; `unique` appends the request number
    so every query text differs (caches keyed by query cannot hide a leak)."""

    def make(i: int) -> dict[str, Any]:
        query = QUERIES[i % len(QUERIES)]
        body: dict[str, Any] = {"query": f"{query} {i}" if unique else query}
        if phase is not None:
            body["phase"] = phase
        return body

    return make


# -- server memory ------------------------------------------------------------------
def server_pid(url: str, pid: int | None) -> int | None:
    """`pid` if given, else the process listening on the URL's port (None if unknown)."""
    if pid is not None:
        return pid
    import psutil

    port = urlsplit(url).port or 80
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        return None
    for conn in conns:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            return int(conn.pid) if conn.pid is not None else None
    return None


def rss_mib(pid: int) -> float:
    import psutil

    rss: int = psutil.Process(pid).memory_info().rss
    return round(rss / 2**20, 1)


# -- CLI ------------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "load", help="load-test a running service on loopback (benchmark, not a test)",
        description="Fixed concurrency for a bounded time per phase against a running service "
        "on this machine: throughput, p50/p95/p99 and errors; with --soak-minutes, the "
        "server's RSS before and after the soak.",
    )
    p.add_argument("--url", default="http://127.0.0.1:8000", help="service base URL (loopback only)")
    p.add_argument("--concurrency", type=int, default=16, help="requests in flight (default 16)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per phase (default 10)")
    p.add_argument("--phase", type=int, choices=(1, 2, 3), action="append",
                   help="phase cap to load (repeatable; default 1, 2 and 3)")
    p.add_argument("--soak-minutes", type=float, default=0.0,
                   help="then hold load this long (unique queries, phases cycled) and report RSS growth")
    p.add_argument("--pid", type=int, help="server pid for RSS (default: the process listening on the port)")
    p.add_argument("--json", action="store_true", help="also print the reports as JSON")
    p.set_defaults(handler=_load)


def _load(args: argparse.Namespace, _settings: object) -> int:
    try:
        require_loopback(args.url)
    except ValueError as err:
        print(f"error: {err}")
        return 2
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    return asyncio.run(_run_cli(args))


async def _run_cli(args: argparse.Namespace) -> int:
    url, conc, dur = args.url, args.concurrency, args.duration
    phases: Iterable[int] = args.phase or (1, 2, 3)
    results: dict[str, Any] = {}
    print(f"load: {url} concurrency {conc}, {dur:g} s per run")
    health = await run_load(url, None, conc, dur, "/health")
    print(health.line("GET /health"))
    results["health"] = asdict(health)
    errors = health.errors
    for phase in phases:
        report = await run_load(url, retrieve_body(phase), conc, dur)
        print(report.line(f"/retrieve phase {phase}"))
        results[f"phase_{phase}"] = asdict(report)
        errors += report.errors
    if args.soak_minutes > 0:
        soak, growth = await _soak(args, url, conc)
        results["soak"] = soak
        errors += soak["report"]["errors"]
        if growth is not None and growth >= ALLOWED_GROWTH_PERCENT:
            print(f"FAIL: RSS grew {growth:.1f} % (limit {ALLOWED_GROWTH_PERCENT:g} %)")
            errors += 1
    if args.json:
        print(json.dumps(results, indent=2))
    return 1 if errors else 0


async def _soak(args: argparse.Namespace, url: str, conc: int) -> tuple[dict[str, Any], float | None]:
    pid = server_pid(url, args.pid)
    before = rss_mib(pid) if pid is not None else None
    print(f"soak: {args.soak_minutes:g} min, server pid {pid}, RSS before {before} MiB")
    total_s = args.soak_minutes * 60
    step = min(SOAK_REPORT_EVERY_S, total_s)
    reports: list[LoadReport] = []
    offset = 0
    ended = time.monotonic() + total_s
    while (left := ended - time.monotonic()) > 0.5:
        base = offset

        def body(i: int, base: int = base) -> dict[str, Any]:
            n = base + i
            return retrieve_body(1 + n % 3, unique=True)(n)

        report = await run_load(url, body, conc, min(step, left))
        offset += report.requests
        reports.append(report)
        rss = rss_mib(pid) if pid is not None else None
        print(report.line(f"soak +{len(reports) * step / 60:.0f} min") + f"  RSS {rss} MiB")
    after = rss_mib(pid) if pid is not None else None
    growth = round((after - before) / before * 100, 2) if before and after else None
    merged = _merge(reports)
    print(merged.line("soak total"))
    print(f"soak: RSS before {before} MiB, after {after} MiB, growth {growth} %")
    return {"report": asdict(merged), "rss_before_mib": before, "rss_after_mib": after,
            "rss_growth_percent": growth}, growth


def _merge(reports: list[LoadReport]) -> LoadReport:
    """Totals of consecutive runs; percentiles are the request-weighted mean of each run's."""
    requests = sum(r.requests for r in reports) or 1
    duration = sum(r.duration_s for r in reports)
    statuses: Counter[int] = Counter()
    for r in reports:
        statuses.update(r.status_counts)

    def weighted(attr: str) -> float:
        total: float = sum(getattr(r, attr) * r.requests for r in reports)
        return round(total / requests, 3)

    return LoadReport(
        path=reports[0].path if reports else "/retrieve",
        concurrency=reports[0].concurrency if reports else 0, duration_s=round(duration, 3),
        requests=sum(r.requests for r in reports), errors=sum(r.errors for r in reports),
        status_counts=dict(statuses), rps=round(sum(r.requests for r in reports) / duration, 1) if duration else 0.0,
        p50_ms=weighted("p50_ms"), p95_ms=weighted("p95_ms"), p99_ms=weighted("p99_ms"),
        max_ms=max((r.max_ms for r in reports), default=0.0),
    )
