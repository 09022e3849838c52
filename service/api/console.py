"""The operator console: `GET /console` (a static page) and golden replay on the server.

- `GET /console` and `GET /console/assets/{name}`: one HTML page with its CSS and
  JavaScript, shipped inside the package (`service/console/`), no CDN. The page
  talks to the service's own JSON API (`/retrieve`, `/admin/flags`, ...). A strict
  Content-Security-Policy allows nothing but this origin: no inline script, no
  third-party requests, so the admin token typed into the page cannot leak.
- `GET /admin/replay/files`: the golden files the server can replay (by name).
- `POST /admin/replay` (admin token): run a golden file (`{"file": "navigation"}`,
  a name under GOLDEN_DIR (default `tests/golden/`), never a path) or posted YAML
  (`{"yaml": "..."}`, at most 64 KiB) in-process through the app's own pipeline,
  with the same checks as `python -m service replay`, and return pass/fail per
  case with the reason. Each case runs at the phase it names, whatever the kill
  switch and the phase/enabled flags say (`note` in the report says so), and
  leaves no kill-switch samples, metrics or query-log lines behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import re
import time
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import msgspec
from litestar import Response, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.exceptions import ClientException, NotFoundException, ValidationException
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, JSONBody

from service.api.auth import admin_guard
from service.api.conversation import clarification_for, conversation_of
from service.api.documents import corpus_categories
from service.api.errors import ErrorBody
from service.api.openapi import ReplayOperation
from service.api.retrieve import response_of, validate_request
from service.api.schemas import RetrieveRequest
from service.domain.types import Base
from service.flags import Flags
from service.golden import GoldenFileError, GoldenSuite, parse_golden_file, phases_of
from service.pipeline import Pipeline
from service.replay import (
    IN_PROCESS_NOTE,
    Label,
    Post,
    Summary,
    Verdict,
    replay_cases,
    replay_dialogues,
)
from service.state import get_state

MAX_YAML_BYTES = 64 * 1024
MAX_REPLAY_RUNS = 1000
"""Case × phase runs in one replay: bounds the work one request can ask for."""
REPLAY_LOCK_KEY = "console_replay_lock"
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

# Only this origin: the page has no inline script or style and loads nothing else.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
ASSETS = {
    "console.css": "text/css",
    "console.js": "text/javascript",
    "favicon.svg": "image/svg+xml",
}


def _asset(name: str) -> bytes:
    return (resources.files("service") / "console" / name).read_bytes()


@get("/console", include_in_schema=False, media_type="text/html")
async def console_page() -> Response[bytes]:
    return Response(_asset("index.html"), media_type="text/html",
                    headers=SECURITY_HEADERS)


@get("/console/assets/{name:str}", include_in_schema=False)
async def console_asset(name: FromPath[str]) -> Response[bytes]:
    media_type = ASSETS.get(name)
    if media_type is None:
        raise NotFoundException(f"no console asset {name!r}")
    return Response(_asset(name), media_type=media_type, headers=SECURITY_HEADERS)


@get("/favicon.ico", include_in_schema=False)
async def favicon() -> Response[bytes]:
    """Browsers ask for it on every page of this origin (the console links the SVG itself)."""
    return Response(_asset("favicon.svg"), media_type="image/svg+xml",
                    headers={"Cache-Control": "max-age=86400", "X-Content-Type-Options": "nosniff"})


# -- golden replay ------------------------------------------------------------
class ReplayRequest(Base, frozen=True):
    """Exactly one of `file` (a name under GOLDEN_DIR, default tests/golden/) or `yaml` (the file's text)."""

    file: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    yaml: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_YAML_BYTES)] | None = None
    phase: Annotated[int, msgspec.Meta(ge=1, le=3)] | None = None


class ReplayCase(Base, frozen=True):
    id: str
    phase: int
    query: str
    passed: bool
    failures: list[str]
    verdict: Verdict = "pass"
    detail: str = ""
    outcome: Label = "PASS"
    """As the command line prints it: XFAIL/XPASS for a case marked `known_failure`."""
    known_failure: str | None = None


class ReplayReport(Base, frozen=True):
    source: str
    passed: int
    failed: int
    duration_ms: float
    results: list[ReplayCase]
    skipped: int = 0
    """Runs answered below their phase by the kill switch or the flags (never in-process)."""
    known_failures: int = 0
    """Known failures that still fail (XFAIL); one that passes (XPASS) counts in `failed`."""
    note: str = ""
    """How the cases were evaluated."""


class GoldenFiles(Base, frozen=True):
    files: list[str]


_ERRORS = {
    400: ResponseSpec(data_container=ErrorBody, description="Bad request or golden file"),
    401: ResponseSpec(data_container=ErrorBody, description="Missing or malformed token"),
    403: ResponseSpec(data_container=ErrorBody, description="Wrong token or admin disabled"),
    404: ResponseSpec(data_container=ErrorBody, description="No such golden file"),
    409: ResponseSpec(data_container=ErrorBody, description="A replay is already running"),
}


def golden_files(directory: Path) -> list[str]:
    if not directory.is_dir():
        return []
    return sorted(p.stem for p in directory.glob("*.yaml") if _FILE_NAME.match(p.stem))


def _cases_of(data: ReplayRequest, directory: Path) -> tuple[str, GoldenSuite]:
    if (data.file is None) == (data.yaml is None):
        raise ValidationException("give exactly one of 'file' (a golden file name) or 'yaml'")
    try:
        if data.yaml is not None:
            if len(data.yaml.encode("utf-8")) > MAX_YAML_BYTES:
                raise ValidationException(f"yaml is limited to {MAX_YAML_BYTES} bytes")
            return "posted YAML", parse_golden_file(data.yaml, "posted YAML")
        name = (data.file or "").removesuffix(".yaml")
        if not _FILE_NAME.match(name) or name not in golden_files(directory):
            raise NotFoundException(
                f"no golden file {data.file!r}; available: {', '.join(golden_files(directory)) or 'none'}"
            )
        path = directory / f"{name}.yaml"
        return f"{name}.yaml", parse_golden_file(path.read_text(encoding="utf-8"), str(path))
    except GoldenFileError as err:
        raise ValidationException(f"golden file rejected: {err}") from err


def _lock(state: State) -> asyncio.Lock:
    lock = state.get(REPLAY_LOCK_KEY)
    if not isinstance(lock, asyncio.Lock):
        lock = asyncio.Lock()
        state[REPLAY_LOCK_KEY] = lock
    return lock


@get("/admin/replay/files", guards=[admin_guard], responses=_ERRORS,
     summary="Golden files the server can replay")
async def replay_files(state: State) -> GoldenFiles:
    return GoldenFiles(files=golden_files(get_state(state).settings.golden_dir))


@post("/admin/replay", guards=[admin_guard], status_code=200, responses=_ERRORS,
      request_max_body_size=2 * MAX_YAML_BYTES, operation_class=ReplayOperation,
      summary="Replay a golden file in-process through this service's pipeline")
async def replay(data: JSONBody[ReplayRequest], state: State, pipeline: NamedDependency[Pipeline]) -> ReplayReport:
    source, golden = _cases_of(data, get_state(state).settings.golden_dir)
    cases = golden.cases
    runs = sum(len(phases_of(case, data.phase)) for case in cases) + sum(len(d.turns) for d in golden.dialogues)
    if runs > MAX_REPLAY_RUNS:
        raise ValidationException(f"{runs} case runs; a replay is limited to {MAX_REPLAY_RUNS}")
    flags = pipeline.flags()
    categories = corpus_categories(get_state(state))

    async def post_retrieve(body: dict[str, Any], under: Flags = flags) -> tuple[int, dict[str, Any]]:
        """The same validation and pipeline as POST /retrieve, at the case's phase:
        no kill switch, flags `phase` and `enabled` set for the case."""
        try:
            request = msgspec.convert(body, RetrieveRequest)
            params = validate_request(request, categories)
            conversation = await conversation_of(state, under, request.history, request.ui_context, request.reply_to)
        except (msgspec.ValidationError, ValidationException) as err:
            return 400, {"error": str(err)}
        at_phase = msgspec.structs.replace(under, enabled=True, phase=params.phase_cap or under.phase)
        outcome = await pipeline.run(dataclasses.replace(params, conversation=conversation), at_phase, observe=False)
        clarification = await clarification_for(state, outcome, params.query)
        payload: dict[str, Any] = msgspec.to_builtins(response_of(outcome, clarification))
        return 200, payload

    def post_under(policy: str) -> Post:
        """A dialogue pinned to a policy plays under it: the flags' `decision.policy` for its turns."""
        pinned = msgspec.structs.replace(flags, decision=msgspec.structs.replace(flags.decision, policy=policy))
        return functools.partial(post_retrieve, under=pinned)

    lock = _lock(state)
    if lock.locked():
        raise ClientException(status_code=409, detail="a replay is already running; try again")
    async with lock:
        started = time.perf_counter()
        policy = flags.decision.policy
        results = await replay_cases(cases, post_retrieve, data.phase, policy)
        results += await replay_dialogues(golden.dialogues, post_retrieve, data.phase, policy, post_under)
        elapsed = (time.perf_counter() - started) * 1000
    out = [ReplayCase(id=r.case_id, phase=r.phase, query=r.query, passed=r.passed,
                      failures=r.failures, verdict=r.verdict, detail=r.detail,
                      outcome=r.outcome, known_failure=r.known_failure) for r in results]
    summary = Summary(results)
    return ReplayReport(source=source, passed=summary.passed, failed=summary.failed,
                        duration_ms=round(elapsed, 1), results=out, skipped=summary.skipped,
                        known_failures=summary.known, note=IN_PROCESS_NOTE)


ROUTES = [console_page, console_asset, favicon, replay_files, replay]
