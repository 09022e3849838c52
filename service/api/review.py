"""Operator routes of the feedback loop (admin token):

- `GET /admin/review[?period=YYYY-MM-DD]`: the period's reproducible sample of
  answered queries with evidence, decision, feedback and the review in force;
- `POST /admin/review/{request_id}`: `{verdict: right|wrong|should_be, expected_slug?, note?}`,
  stored as a new audit row (reviewer = `admin@<client address>`);
- `GET /admin/queries/{request_id}`: one logged query with its feedback and review history;
- `GET /admin/goldens/export[?format=yaml|json]`: golden cases from reviewed/fed-back queries;
- `GET /admin/insights?window=7d`: the seed plan's metrics and Phase Triggers.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, get, post
from litestar.datastructures import State
from litestar.exceptions import NotFoundException
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, JSONBody, QueryParameter

from service.api.auth import admin_guard
from service.api.body import invalid, strict_required
from service.api.errors import client_errors
from service.api.feedback import RequestId, Slug, check_page, feedback_of, unavailable
from service.domain.types import Base
from service.feedback import export, insights, store
from service.feedback.log_writer import DB_ERRORS
from service.feedback.review import period_bounds, seed_of
from service.golden import GoldenFile
from service.state import get_state

YAML_CONTENT_TYPE = "application/yaml; charset=utf-8"


class ReviewRequest(Base, frozen=True):
    verdict: Literal["right", "wrong", "should_be"]
    expected_slug: Slug | None = None
    """Required for `should_be`: the page that should have answered."""
    note: Annotated[str, msgspec.Meta(max_length=2000)] | None = None


def _pool(state: State) -> Any:
    pool = get_state(state).pool
    if pool is None:
        raise unavailable("the database is not reachable; try again later")
    return pool


def _check_id(request_id: str) -> None:
    """An id no response could have carried is simply not in the log (and never reaches SQL)."""
    try:
        msgspec.convert(request_id, RequestId)
    except msgspec.ValidationError as err:
        raise NotFoundException(f"no logged request with id {request_id!r}") from err


def _now() -> datetime:
    return datetime.now(UTC)


@get("/admin/review", guards=[admin_guard], responses=client_errors(400, 401, 403, 503),
     summary="This period's review sample: evidence, decision, feedback, review")
async def review_queue(
    state: State,
    period: Annotated[date | None, QueryParameter(description="any day of the period (UTC); default: today")] = None,
) -> dict[str, Any]:
    fb = feedback_of(state)
    flags = fb.flags().review
    begin, end = period_bounds(flags.period, now=_now(), start=period)
    seed = seed_of(flags.period, begin)
    try:
        await fb.writer.flush()
        items = await store.sample(_pool(state), begin, end, flags.sample_size, seed)
    except DB_ERRORS as err:
        raise unavailable(f"the database is not reachable ({type(err).__name__})") from err
    return {"period": flags.period, "start": begin.isoformat(), "end": end.isoformat(), "seed": seed,
            "size": flags.sample_size, "items": items}


@post("/admin/review/{request_id:str}", guards=[admin_guard], status_code=200,
      responses=client_errors(400, 401, 403, 404, 503), summary="Review one logged answer")
async def post_review(
    request_id: FromPath[str], data: JSONBody[ReviewRequest], state: State, request: Request[Any, Any, Any]
) -> dict[str, Any]:
    body = await strict_required(request, ReviewRequest)
    _check_id(request_id)
    if body.verdict == "should_be" and body.expected_slug is None:
        raise invalid("expected_slug", "required when verdict is should_be")
    check_page(body.expected_slug, set(feedback_of(state).pages()), "expected_slug")
    reviewer = f"admin@{request.client.host if request.client else 'unknown'}"
    pool = _pool(state)
    writer = feedback_of(state).writer
    try:
        if writer.pending(request_id):
            await writer.flush()
        review = await store.add_review(pool, request_id, body.verdict, body.expected_slug, body.note, reviewer)
        history = await store.review_history(pool, request_id)
    except store.UnknownRequest as err:
        raise NotFoundException(f"no logged request with id {request_id!r}") from err
    except DB_ERRORS as err:
        raise unavailable(f"the database is not reachable ({type(err).__name__})") from err
    return {"review": review, "history": history}


@get("/admin/queries/{request_id:str}", guards=[admin_guard], responses=client_errors(400, 401, 403, 404, 503),
     summary="One logged query with its feedback and review history")
async def get_logged_query(request_id: FromPath[str], state: State) -> dict[str, Any]:
    _check_id(request_id)
    pool = _pool(state)
    try:
        await feedback_of(state).writer.flush()
        row = await store.get_query(pool, request_id)
        if row is None:
            raise NotFoundException(f"no logged request with id {request_id!r}")
        row["history"] = await store.review_history(pool, request_id)
    except DB_ERRORS as err:
        raise unavailable(f"the database is not reachable ({type(err).__name__})") from err
    return row


async def build_export(state: State) -> export.Export:
    fb = feedback_of(state)
    try:
        rows = await store.export_candidates(_pool(state))
    except DB_ERRORS as err:
        raise unavailable(f"the database is not reachable ({type(err).__name__})") from err
    return export.export_cases(rows, set(fb.pages()))


@get("/admin/goldens/export", guards=[admin_guard], media_type=YAML_CONTENT_TYPE,
     responses={**client_errors(401, 403, 503), 200: ResponseSpec(
         data_container=GoldenFile, media_type=YAML_CONTENT_TYPE, generate_examples=False,
         description="A golden file (YAML) ready to commit under tests/golden/")},
     summary="Golden cases (service/golden.py format) from reviewed and fed-back queries; "
     "refused cases are listed in its leading comments")
async def export_goldens(state: State) -> str:
    return (await build_export(state)).yaml()


@get("/admin/insights", guards=[admin_guard], responses=client_errors(400, 401, 403, 503),
     summary="Keyword match, clarify, no-match, feedback and review rates; latency; Phase Triggers")
async def get_insights(
    state: State,
    window: Annotated[str, QueryParameter(pattern=insights.WINDOW_PATTERN, description="e.g. 30m, 24h, 7d")] = "7d",
) -> dict[str, Any]:
    fb = feedback_of(state)
    flags = fb.flags()  # the configured phase: advice is only ever about a phase above it
    try:
        window_s = insights.parse_window(window)
    except insights.BadWindow as err:
        raise invalid("window", str(err)) from err
    end = _now()
    start = end - timedelta(seconds=window_s)
    pool = _pool(state)
    started = time.perf_counter()
    try:
        await fb.writer.flush()
        counts = await store.counts(pool, start, end)
        latency = await store.latency(pool, start, end)
        series = await store.series(pool, start, end, insights.bucket_for(window_s))
    except DB_ERRORS as err:
        raise unavailable(f"the database is not reachable ({type(err).__name__})") from err
    return {
        "window": window, "start": start.isoformat(), "end": end.isoformat(),
        "counts": dataclasses.asdict(counts),
        "rates": {name: rate.json() for name, rate in insights.rates(counts).items()},
        "latency_by_phase": latency, "triggers": insights.triggers(counts, flags.insights, flags.phase),
        "phase_in_force": flags.phase,
        "series": series, "log": fb.writer.describe(),
        "computed_ms": round((time.perf_counter() - started) * 1000, 3),
    }


ROUTES = [review_queue, post_review, get_logged_query, export_goldens, get_insights]
