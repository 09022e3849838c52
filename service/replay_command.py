"""`python -m service replay FILE [--phase N] [--url URL]`: one line per case, then a summary.

In-process by default: the real app (lifespan, database, seeding, pipeline)
behind an in-memory ASGI client, so nothing listens on a port; the cases go
through `POST /admin/replay` (with a token made up for this process only), so
each is evaluated at the phase it names, independent of the kill switch (see
service/replay.py). With `--url` the cases go to a running service's
`/retrieve` as any client's would.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import secrets
import sys
from pathlib import Path
from typing import Any

from service.golden import GoldenFileError, GoldenSuite, endpoint_of, parse_golden_file
from service.readiness import http_get, wait_until_ready
from service.replay import IN_PROCESS_NOTE, CaseResult, Summary, replay_cases, replay_dialogues
from service.settings import Settings

READY_TIMEOUT_S = 180.0
QUIET_LOGGERS = ("service.query", "httpx", "httpcore")
"""Per-request logs that would interleave with the case lines."""
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


async def _run_over_http(url: str, golden: GoldenSuite, phase: int | None) -> list[CaseResult]:
    import httpx

    async with httpx.AsyncClient(base_url=url, timeout=30) as client:

        async def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            response = await client.post(endpoint_of(body), json=body)
            return response.status_code, response.json()

        ready = await wait_until_ready(http_get(client), timeout_s=READY_TIMEOUT_S)
        # The known failures that apply are those of the policy the service runs.
        policy = ready.get("decision_policy")
        policy = policy if isinstance(policy, str) else None
        results = await replay_cases(golden.cases, post, phase, policy)
        return results + await replay_dialogues(golden.dialogues, post, phase, policy)


async def _run_in_process(settings: Settings, path: Path, phase: int | None) -> list[CaseResult]:
    from litestar.testing import AsyncTestClient

    from service.app import create_app

    token = secrets.token_urlsafe(24)
    body: dict[str, Any] = {}
    if path.suffix == ".yaml" and _FILE_NAME.match(path.stem):
        settings = settings.with_overrides(admin_token=token, golden_dir=path.resolve().parent)
        body["file"] = path.stem
    else:
        settings = settings.with_overrides(admin_token=token)
        body["yaml"] = path.read_text(encoding="utf-8")
    if phase is not None:
        body["phase"] = phase
    async with AsyncTestClient(app=create_app(settings), timeout=600) as client:
        await wait_until_ready(http_get(client), timeout_s=READY_TIMEOUT_S)
        response = await client.post("/admin/replay", json=body, headers={"Authorization": f"Bearer {token}"})
        report = response.json()
        if response.status_code != 200:
            raise RuntimeError(f"replay refused (HTTP {response.status_code}): {report}")
    return [
        CaseResult(r["id"], r["phase"], r["query"], r["failures"], r["verdict"], r["detail"], r.get("known_failure"))
        for r in report["results"]
    ]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "replay", help="replay a golden-query file",
        description="Run every golden case (in-process against the seeded corpus, each at the "
        "phase it names whatever the kill switch says; or against a running service with --url, "
        "where a case the kill switch or the flags answered below its phase is reported as such, "
        "not as a failure); one line per case and a summary; exit 1 on any failure.",
    )
    p.add_argument("file", type=Path, help="golden YAML file (see service/golden.py)")
    p.add_argument("--phase", type=int, choices=(1, 2, 3), help="only replay this phase")
    p.add_argument("--url", help="base URL of a running service, e.g. http://127.0.0.1:8000")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        golden = parse_golden_file(args.file.read_text(encoding="utf-8"), str(args.file))
    except (GoldenFileError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    if args.url:
        results = asyncio.run(_run_over_http(args.url, golden, args.phase))
        note = f"over HTTP ({args.url}): the service answered as it would any client"
    else:
        results = asyncio.run(_run_in_process(settings, args.file, args.phase))
        note = IN_PROCESS_NOTE
    summary = Summary(results)
    print(note)
    for result in results:
        print(result.line())
    print(summary.line())
    return 1 if summary.failed else 0
