"""A loopback HTTP load generator and the `python -m lab load` benchmark.

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

Every `/retrieve` row says which phase actually answered (from each
response's `phase` and `fallback_path`) and warns when the flags or the kill
switch capped it below the phase asked for. Percentiles are nearest-rank over
the raw latencies of the whole run (service/stats.py, shared with
`bench`); the soak merges raw latencies too, never averages percentiles.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from service.stats import percentile

MAX_CONCURRENCY = 512
MAX_DURATION_S = 3600.0
MAX_REQUESTS = 2_000_000
REQUEST_TIMEOUT_S = 30.0
SOAK_REPORT_EVERY_S = 60.0
ALLOWED_GROWTH_PERCENT = 10.0

BodyFactory = Callable[[int], dict[str, Any]]
FollowUp = Callable[[int, bytes], tuple[str, dict[str, Any]] | None]
"""(request number, 200 response body) → a second request on the same connection, or None."""
FEEDBACK_VERDICTS = ("helpful", "not_what_i_meant", "wrong_page", "missing")

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
    answered_by: dict[int, int] = field(default_factory=dict)
    """Responses per phase that answered (the body's `phase`; 0 = cache/generic)."""
    fell_back: int = 0
    """Responses whose `fallback_path` is not empty (a higher phase failed or was shed)."""
    fallback_reasons: dict[str, int] = field(default_factory=dict)
    """First fallback step, numbers replaced by N (e.g. the queue-full wait)."""
    follow_up_counts: dict[int, int] = field(default_factory=dict)
    """Statuses of the follow-up requests (e.g. POST /feedback); their 5xx count as errors."""
    latencies_ms: list[float] = field(default_factory=list, repr=False, compare=False)
    """Raw samples: merged runs recompute percentiles from these."""

    def summary(self) -> dict[str, Any]:
        """JSON-able figures without the raw samples."""
        out = asdict(self)
        out.pop("latencies_ms")
        return out

    def answered(self) -> str:
        """'phase 3 92%, phase 2 8%' ('' when no response said)."""
        total = sum(self.answered_by.values())
        if not total:
            return ""
        parts = sorted(self.answered_by.items(), key=lambda kv: -kv[1])
        return ", ".join(f"phase {p} {n / total:.0%}" for p, n in parts)

    def warnings(self, requested_phase: int | None) -> list[str]:
        """What makes the row something else than the phase it asked for."""
        total = sum(self.answered_by.values())
        if requested_phase is None or not total:
            return []
        out: list[str] = []
        below = sum(n for p, n in self.answered_by.items() if p < requested_phase)
        capped = below - self.fell_back
        if self.answered_by.get(requested_phase, 0) == 0 and self.fell_back == 0:
            out.append(
                f"phase {requested_phase} asked, every answer came from phase {max(self.answered_by)} "
                "with no fallback: capped by the flags (phase / DOC_RETRIEVAL_PHASE) or the kill switch"
            )
        elif capped > 0.05 * total:
            out.append(f"{capped} of {total} answers below phase {requested_phase} with no fallback: "
                       "the kill switch or a flag change capped part of the run")
        if self.fell_back:
            top = sorted(self.fallback_reasons.items(), key=lambda kv: -kv[1])[:3]
            out.append(f"{self.fell_back} of {total} fell back (" + "; ".join(f"{r} ×{n}" for r, n in top) + ")")
        return out

    def line(self, label: str) -> str:
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(self.status_counts.items()))
        answered = f"  answered: {self.answered()}" if self.answered_by else ""
        follow = ", ".join(f"{k}: {v}" for k, v in sorted(self.follow_up_counts.items()))
        follow = f"  follow-ups [{follow}]" if follow else ""
        return (
            f"{label:<18} {self.requests:>8} req {self.rps:>9.1f} rps  "
            f"p50 {self.p50_ms:>7.2f}  p95 {self.p95_ms:>7.2f}  p99 {self.p99_ms:>7.2f} ms  "
            f"errors {self.errors}  [{statuses}]{answered}{follow}"
        )


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _outcome(body: bytes) -> tuple[int, str | None] | None:
    """(phase, first fallback step) of a /retrieve response; None if not one."""
    try:
        doc = json.loads(body)
        phase = int(doc["phase"])
    except (ValueError, KeyError, TypeError):
        return None
    steps = doc.get("fallback_path") or []
    reason = None
    if steps and isinstance(steps[0], dict):
        reason = f"{steps[0].get('tier')}: {_NUMBER.sub('N', str(steps[0].get('reason', '')))[:80]}"
    return phase, reason


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


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Read one HTTP/1.1 response (Content-Length framed): (status, body)."""
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
    body = await reader.readexactly(length)
    return int(status_line[9:12]), body


async def run_load(
    url: str,
    make_body: BodyFactory | None,
    concurrency: int,
    duration_s: float,
    path: str = "/retrieve",
    *,
    max_requests: int = MAX_REQUESTS,
    timeout_s: float = REQUEST_TIMEOUT_S,
    follow_up: FollowUp | None = None,
) -> LoadReport:
    """Hold `concurrency` requests in flight for `duration_s` (or `max_requests`).

    `make_body(i)` gives the JSON body of the i-th request (POST); with
    `make_body=None` the requests are GETs (e.g. `/health`).  Each worker
    keeps one HTTP/1.1 keep-alive connection and writes pre-encoded request
    bytes: an HTTP client library costs more CPU per request than the
    service's own cheapest endpoint, and on 2 cores that would measure the
    client, not the server. `follow_up` may send a second request after a 200
    (the soak's feedback); it is counted apart and not in the latencies.
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
    answered: Counter[int] = Counter()
    reasons: Counter[str] = Counter()
    follow_ups: Counter[int] = Counter()
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
                    status, body = await asyncio.wait_for(_read_response(reader), timeout_s)
                    extra = follow_up(i, body) if follow_up is not None and status == 200 else None
                    if extra is not None:
                        writer.write(_request_bytes(host, extra[0], extra[1]))
                        extra_status, _ = await asyncio.wait_for(_read_response(reader), timeout_s)
                        follow_ups[extra_status] += 1
                        errors += extra_status >= 500
                except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError):
                    errors += 1
                    statuses[0] += 1  # 0: no HTTP response at all
                    if connection is not None:
                        connection[1].close()
                    connection = None
                    continue
                latencies.append((time.perf_counter() - t0) * 1000)  # includes a follow-up, if any
                statuses[status] += 1
                outcome = _outcome(body) if status == 200 and make_body is not None else None
                if outcome is not None:
                    answered[outcome[0]] += 1
                    if outcome[1] is not None:
                        reasons[outcome[1]] += 1
                if status >= 500:
                    errors += 1
        finally:
            if connection is not None:
                connection[1].close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))

    elapsed = time.perf_counter() - started
    return _report(path, concurrency, elapsed, statuses, errors, latencies, answered, reasons, follow_ups)


def _report(
    path: str, concurrency: int, elapsed: float, statuses: Counter[int], errors: int,
    latencies: list[float], answered: Counter[int], reasons: Counter[str],
    follow_ups: Counter[int] | None = None,
) -> LoadReport:
    total = sum(statuses.values())
    return LoadReport(
        path=path, concurrency=concurrency, duration_s=round(elapsed, 3), requests=total,
        errors=errors, status_counts=dict(statuses), rps=round(total / elapsed, 1) if elapsed else 0.0,
        p50_ms=percentile(latencies, 50), p95_ms=percentile(latencies, 95),
        p99_ms=percentile(latencies, 99), max_ms=round(max(latencies), 3) if latencies else 0.0,
        answered_by=dict(answered), fell_back=sum(reasons.values()), fallback_reasons=dict(reasons),
        follow_up_counts=dict(follow_ups or {}), latencies_ms=latencies,
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


def feedback_follow_up(every: int) -> FollowUp:
    """Every `every`-th answered request gets a POST /feedback for its request id,
    verdicts cycled, as a chat backend relays users' thumbs up and down."""

    def make(i: int, body: bytes) -> tuple[str, dict[str, Any]] | None:
        if every <= 0 or i % every:
            return None
        try:
            request_id = json.loads(body)["request_id"]
        except (ValueError, KeyError, TypeError):
            return None
        return "/feedback", {"request_id": request_id, "verdict": FEEDBACK_VERDICTS[(i // every) % 4]}

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
    p.add_argument("--feedback-every", type=int, default=0, metavar="N",
                   help="during the soak, POST /feedback for every N-th answer (0 = none); 429s from the "
                        "feedback rate limit are counted, not errors")
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
    results["health"] = health.summary()
    errors = health.errors
    for phase in phases:
        report = await run_load(url, retrieve_body(phase), conc, dur)
        print(report.line(f"/retrieve cap {phase}"))
        for warning in report.warnings(phase):
            print(f"  warning: {warning}")
        results[f"phase_{phase}"] = {**report.summary(), "warnings": report.warnings(phase)}
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

        report = await run_load(url, body, conc, min(step, left),
                                follow_up=feedback_follow_up(getattr(args, "feedback_every", 0)))
        offset += report.requests
        reports.append(report)
        rss = rss_mib(pid) if pid is not None else None
        print(report.line(f"soak +{len(reports) * step / 60:.0f} min") + f"  RSS {rss} MiB")
    after = rss_mib(pid) if pid is not None else None
    growth = round((after - before) / before * 100, 2) if before and after else None
    merged = _merge(reports)
    print(merged.line("soak total"))
    print(f"soak: RSS before {before} MiB, after {after} MiB, growth {growth} %")
    return {"report": merged.summary(), "rss_before_mib": before, "rss_after_mib": after,
            "rss_growth_percent": growth}, growth


def _merge(reports: list[LoadReport]) -> LoadReport:
    """Consecutive runs as one: totals, and percentiles of all their raw latencies."""
    statuses: Counter[int] = Counter()
    answered: Counter[int] = Counter()
    reasons: Counter[str] = Counter()
    follow_ups: Counter[int] = Counter()
    latencies: list[float] = []
    for r in reports:
        statuses.update(r.status_counts)
        follow_ups.update(r.follow_up_counts)
        answered.update(r.answered_by)
        reasons.update(r.fallback_reasons)
        latencies.extend(r.latencies_ms)
    return _report(
        reports[0].path if reports else "/retrieve", reports[0].concurrency if reports else 0,
        sum(r.duration_s for r in reports), statuses, sum(r.errors for r in reports), latencies,
        answered, reasons, follow_ups,
    )
