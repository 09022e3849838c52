"""`python -m service replay FILE`: run golden queries and report pass/fail per case.

In-process by default: the real app (lifespan, database, seeding, pipeline)
behind an in-memory ASGI client, so nothing listens on a port.  With
`--url` the same requests go to a running service over HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.golden import (
    GoldenCase,
    GoldenFileError,
    check,
    endpoint_of,
    load_golden,
    phases_of,
    request_of,
    verdict,
)
from service.readiness import wait_until_ready
from service.settings import Settings

Post = Callable[[dict[str, Any]], Awaitable[tuple[int, dict[str, Any]]]]
READY_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    phase: int
    query: str
    failures: list[str]
    verdict: str = ""
    known_failure: str | None = None

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def ok(self) -> bool:
        """As expected: a pass, or a known failure that still fails."""
        return self.outcome in ("PASS", "XFAIL")

    @property
    def outcome(self) -> str:
        return self.verdict or ("PASS" if self.passed else "FAIL")

    def line(self) -> str:
        reason = f": {'; '.join(self.failures)}" if self.failures else ""
        known = f" [known failure: {self.known_failure}]" if self.known_failure else ""
        return f"{self.outcome} [phase {self.phase}] {self.case_id} ({self.query!r}){reason}{known}"


async def replay_cases(cases: list[GoldenCase], post: Post, only_phase: int | None = None) -> list[CaseResult]:
    """POST every case at each of its phases and check the expectations."""
    results: list[CaseResult] = []
    for case in cases:
        for phase in phases_of(case, only_phase):
            _, body = request_of(case, phase)
            status, payload = await post(body)
            if status != 200:
                failures = [f"HTTP {status}: {payload}"]
            else:
                failures = check(case, payload)
                if payload.get("phase") != phase:
                    failures.append(f"answered by phase {payload.get('phase')} (fallback: {payload.get('fallback_path')})")
            results.append(CaseResult(case.id, phase, case.query, failures, verdict(case, failures), case.known_failure))
    return results


async def _replay_through(client: Any, cases: list[GoldenCase], phase: int | None) -> list[CaseResult]:
    """Wait for readiness, then replay; `client` is an httpx-style async client."""

    async def get(path: str) -> tuple[int, dict[str, Any]]:
        response = await client.get(path)
        return response.status_code, response.json()

    async def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = await client.post(endpoint_of(body), json=body)
        return response.status_code, response.json()

    await wait_until_ready(get, timeout_s=READY_TIMEOUT_S)
    return await replay_cases(cases, post, phase)


async def _run_over_http(url: str, cases: list[GoldenCase], phase: int | None) -> list[CaseResult]:
    import httpx

    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        return await _replay_through(client, cases, phase)


async def _run_in_process(settings: Settings, cases: list[GoldenCase], phase: int | None) -> list[CaseResult]:
    from litestar.testing import AsyncTestClient

    from service.app import create_app

    async with AsyncTestClient(app=create_app(settings), timeout=60) as client:
        return await _replay_through(client, cases, phase)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "replay", help="replay a golden-query file",
        description="Run every golden case (in-process against the seeded corpus, or against "
        "a running service with --url); one line per case; exit 1 on any failure.",
    )
    p.add_argument("file", type=Path, help="golden YAML file (see service/golden.py)")
    p.add_argument("--phase", type=int, choices=(1, 2, 3), help="only replay this phase")
    p.add_argument("--url", help="base URL of a running service, e.g. http://127.0.0.1:8000")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        cases = load_golden(args.file)
    except GoldenFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.url:
        results = asyncio.run(_run_over_http(args.url, cases, args.phase))
    else:
        results = asyncio.run(_run_in_process(settings, cases, args.phase))
    for result in results:
        print(result.line())
    known = sum(r.outcome == "XFAIL" for r in results)
    failed = sum(not r.ok for r in results)
    print(f"{len(results) - failed - known} passed, {failed} failed, {known} known failures")
    return 1 if failed else 0
