"""SQL of the operator's loop (tables of migration 010): feedback, reviews, samples, figures.

Database errors are told apart by asyncpg's SQLSTATE classes, never by message:
a feedback or review for a request id the log does not hold violates the
foreign key (`UnknownRequest`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import asyncpg

Verdict = Literal["helpful", "not_what_i_meant", "wrong_page", "missing"]
ReviewVerdict = Literal["right", "wrong", "should_be"]


class UnknownRequest(LookupError):
    """No query-log row has this request id."""


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def query_row(row: asyncpg.Record) -> dict[str, Any]:
    """A query_log row (plus any joined feedback/review columns) as plain JSON-able values."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, datetime):
            out[key] = value.isoformat()
        elif key in {"results", "options", "fallback_path", "corrections", "conversation",
                     "feedback", "review"}:
            out[key] = _json(value)
        elif isinstance(value, list):
            out[key] = list(value)
        else:
            out[key] = value
    return out


_FEEDBACK_OF = """(select coalesce(jsonb_agg(jsonb_build_object('verdict', f.verdict,
        'expected_slug', f.expected_slug, 'comment', f.comment, 'at', f.at) order by f.at), '[]')
    from query_feedback f where f.request_id = q.request_id) as feedback"""
_REVIEW_OF = """(select to_jsonb(r) - 'request_id' from query_reviews r where r.request_id = q.request_id
    order by r.at desc, r.id desc limit 1) as review,
    (select count(*) from query_reviews r where r.request_id = q.request_id) as reviews"""


async def get_query(pool: asyncpg.Pool[Any], request_id: str) -> dict[str, Any] | None:
    row = await pool.fetchrow(
        f"select q.*, {_FEEDBACK_OF}, {_REVIEW_OF} from query_log q where q.request_id = $1", request_id
    )
    return None if row is None else query_row(row)


async def add_feedback(
    pool: asyncpg.Pool[Any], request_id: str, verdict: Verdict, expected_slug: str | None,
    comment: str | None, client: str,
) -> bool:
    """Store one feedback; False when this request already has this verdict (idempotent)."""
    try:
        inserted = await pool.fetchval(
            "insert into query_feedback (request_id, verdict, expected_slug, comment, client_address)"
            " values ($1, $2, $3, $4, $5) on conflict (request_id, verdict) do nothing returning id",
            request_id, verdict, expected_slug, comment, client,
        )
    except asyncpg.ForeignKeyViolationError as err:
        raise UnknownRequest(request_id) from err
    return inserted is not None


async def add_review(
    pool: asyncpg.Pool[Any], request_id: str, verdict: ReviewVerdict, expected_slug: str | None,
    note: str | None, reviewer: str,
) -> dict[str, Any]:
    """A new review row (earlier ones stay: the audit trail)."""
    try:
        row = await pool.fetchrow(
            "insert into query_reviews (request_id, verdict, expected_slug, note, reviewer)"
            " values ($1, $2, $3, $4, $5) returning id, request_id, verdict, expected_slug, note, reviewer, at",
            request_id, verdict, expected_slug, note, reviewer,
        )
    except asyncpg.ForeignKeyViolationError as err:
        raise UnknownRequest(request_id) from err
    assert row is not None
    return query_row(row)


async def review_history(pool: asyncpg.Pool[Any], request_id: str) -> list[dict[str, Any]]:
    rows = await pool.fetch(
        "select id, verdict, expected_slug, note, reviewer, at from query_reviews"
        " where request_id = $1 order by at, id", request_id,
    )
    return [query_row(r) for r in rows]


async def sample(
    pool: asyncpg.Pool[Any], start: datetime, end: datetime, size: int, seed: str
) -> list[dict[str, Any]]:
    """`size` answered queries of [start, end), ordered by a hash of (seed, request id).

    The same seed over the same rows always gives the same sample; a row's rank
    does not depend on the other rows, so a closed period's sample never changes.
    """
    rows = await pool.fetch(
        f"select q.*, {_FEEDBACK_OF}, {_REVIEW_OF} from query_log q"
        " where q.at >= $1 and q.at < $2 and q.status = 'answer'"
        " order by md5($3 || q.request_id), q.request_id limit $4",
        start, end, seed, size,
    )
    return [query_row(r) for r in rows]


async def export_candidates(pool: asyncpg.Pool[Any]) -> list[dict[str, Any]]:
    """Queries with a review or feedback, oldest first."""
    rows = await pool.fetch(
        f"select q.request_id, q.at, q.query, q.status, q.phase, q.results, q.options, {_FEEDBACK_OF},"
        f" {_REVIEW_OF} from query_log q"
        " where exists (select 1 from query_reviews r where r.request_id = q.request_id)"
        " or exists (select 1 from query_feedback f where f.request_id = q.request_id)"
        " order by q.at, q.request_id"
    )
    return [query_row(r) for r in rows]


async def reviewed_candidates(pool: asyncpg.Pool[Any]) -> list[dict[str, Any]]:
    """Queries with a review in force (a reviewer's verdict, feedback it confirms included),
    oldest first, as `export_candidates` gives them, with `conversation` (whether the request
    carried one)."""
    rows = await pool.fetch(
        f"select q.request_id, q.at, q.query, q.status, q.phase, q.results, q.options,"
        f" q.conversation is not null as in_conversation, {_FEEDBACK_OF}, {_REVIEW_OF} from query_log q"
        " where exists (select 1 from query_reviews r where r.request_id = q.request_id)"
        " order by q.at, q.request_id"
    )
    return [query_row(r) for r in rows]


@dataclass(frozen=True)
class Counts:
    """The window's raw counts; every rate in the insights is one of these over another."""

    queries: int = 0
    answers: int = 0
    clarify: int = 0
    no_match: int = 0
    keyword_runs: int = 0
    keyword_matched: int = 0
    unknown_word: int = 0
    unknown_word_no_match: int = 0
    questions: int = 0
    question_failures: int = 0
    question_keyword_runs: int = 0
    question_keyword_matched: int = 0
    not_what_i_meant: int = 0
    feedback: int = 0
    reviews: int = 0
    reviews_right: int = 0


_COUNTS = """
select count(*) as queries,
    count(*) filter (where status = 'answer') as answers,
    count(*) filter (where status = 'clarify') as clarify,
    count(*) filter (where status = 'no_match') as no_match,
    count(*) filter (where keyword_matched is not null) as keyword_runs,
    count(*) filter (where keyword_matched) as keyword_matched,
    count(*) filter (where cardinality(unknown_tokens) > 0) as unknown_word,
    count(*) filter (where cardinality(unknown_tokens) > 0 and status = 'no_match') as unknown_word_no_match,
    count(*) filter (where question) as questions,
    count(*) filter (where question and status in ('clarify', 'no_match')) as question_failures,
    count(*) filter (where question and keyword_matched is not null) as question_keyword_runs,
    count(*) filter (where question and keyword_matched) as question_keyword_matched
from query_log where at >= $1 and at < $2 and status <> 'disabled'
"""
_FEEDBACK_COUNTS = """
select count(distinct f.request_id) filter (where f.verdict = 'not_what_i_meant') as not_what_i_meant,
    count(distinct f.request_id) as feedback
from query_feedback f join query_log q using (request_id)
where q.at >= $1 and q.at < $2 and q.status <> 'disabled'
"""
_REVIEW_COUNTS = """
select count(*) as reviews, count(*) filter (where r.verdict = 'right') as reviews_right
from query_log q
join lateral (select verdict from query_reviews r where r.request_id = q.request_id
              order by r.at desc, r.id desc limit 1) r on true
where q.at >= $1 and q.at < $2
"""
_LATENCY = """
select phase, count(*) as n,
    percentile_cont(0.5) within group (order by latency_ms) as p50,
    percentile_cont(0.95) within group (order by latency_ms) as p95
from query_log where at >= $1 and at < $2 and status <> 'disabled'
group by phase order by phase
"""
_SERIES = """
select date_bin($3::interval, at, $1) as bucket, count(*) as queries,
    count(*) filter (where keyword_matched is not null) as keyword_runs,
    count(*) filter (where keyword_matched) as keyword_matched,
    count(*) filter (where status = 'clarify') as clarify,
    count(*) filter (where status = 'no_match') as no_match
from query_log where at >= $1 and at < $2 and status <> 'disabled'
group by 1 order by 1
"""


async def counts(pool: asyncpg.Pool[Any], start: datetime, end: datetime) -> Counts:
    async with pool.acquire() as conn:
        base = await conn.fetchrow(_COUNTS, start, end)
        fb = await conn.fetchrow(_FEEDBACK_COUNTS, start, end)
        rv = await conn.fetchrow(_REVIEW_COUNTS, start, end)
    assert base is not None and fb is not None and rv is not None
    return Counts(**dict(base), **dict(fb), **dict(rv))


async def latency(pool: asyncpg.Pool[Any], start: datetime, end: datetime) -> list[dict[str, Any]]:
    rows = await pool.fetch(_LATENCY, start, end)
    return [{"phase": r["phase"], "n": r["n"], "p50_ms": round(r["p50"], 3), "p95_ms": round(r["p95"], 3)}
            for r in rows]


async def series(
    pool: asyncpg.Pool[Any], start: datetime, end: datetime, bucket_s: int
) -> list[dict[str, Any]]:
    from datetime import timedelta

    rows = await pool.fetch(_SERIES, start, end, timedelta(seconds=bucket_s))
    out = []
    for r in rows:
        q = r["queries"]
        out.append({
            "start": r["bucket"].isoformat(), "queries": q,
            "keyword_match_rate": round(r["keyword_matched"] / r["keyword_runs"], 4) if r["keyword_runs"] else None,
            "clarify_rate": round(r["clarify"] / q, 4) if q else None,
            "no_match_rate": round(r["no_match"] / q, 4) if q else None,
        })
    return out
