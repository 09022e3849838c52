"""The operator's loop on a real PostgreSQL: query log, feedback, review queue, export, insights.

Each test builds its own app on a fresh database (the fixture corpus of three
pages), so every count below is exactly what the test sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import yaml
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.db.embedded import EmbeddedPostgres
from service.feedback import command
from service.feedback.log_writer import QueryLogWriter
from service.feedback.service import FEEDBACK_KEY, Feedback
from service.flags import Flags, apply_overrides
from service.golden import parse_golden
from service.replay import replay_cases
from service.settings import PROJECT_ROOT, Settings
from tests.conftest import run_job, wait_until_ready

TOKEN = "feedback-test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _flags_file(tmp_path: Path, **sections: dict[str, Any]) -> Path:
    """flags.yaml with some sections' keys replaced."""
    data = yaml.safe_load((PROJECT_ROOT / "flags.yaml").read_text(encoding="utf-8")) or {}
    for section, values in sections.items():
        data[section] = {**data.get(section, {}), **values}
    path = tmp_path / "flags.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@asynccontextmanager
async def running(db_url: str, seeds: Path, flags_file: Path | None = None) -> AsyncIterator[Any]:
    settings = Settings(
        database_url=db_url, seeds_dir=seeds, admin_token=TOKEN,
        migrations_dir=PROJECT_ROOT / "migrations",
        flags_file=flags_file or PROJECT_ROOT / "flags.yaml", db_connect_timeout=30,
    )
    async with AsyncTestClient(app=create_app(settings), timeout=60) as client:
        await wait_until_ready(client, semantic=False)
        yield client


def feedback_of(client: Any) -> Feedback:
    value: Feedback = client.app.state[FEEDBACK_KEY]
    return value


@asynccontextmanager
async def connected(dsn: str) -> AsyncIterator[asyncpg.Pool[Any]]:
    """The test's own pool (the app's lives on the test client's event loop)."""
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2)
    try:
        yield pool
    finally:
        await pool.close()


async def ask(client: Any, query: str, path: str = "/retrieve", **extra: Any) -> dict[str, Any]:
    response = await client.post(path, json={"query": query, **extra})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def send_feedback(client: Any, **body: Any) -> Any:
    return await client.post("/feedback", json=body)


async def eventually(check: Callable[[], Any], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


# -- the query log ----------------------------------------------------------------
async def test_every_retrieve_and_context_call_is_logged(db_url: str, fixture_seeds: Path) -> None:
    async with running(db_url, fixture_seeds) as client:
        answer = await ask(client, "how do I switch workspaces", phase=2)
        context = await ask(client, "edit quick links", path="/context")
        logged = (await client.get(f"/admin/queries/{answer['request_id']}", headers=AUTH)).json()
        assert logged["endpoint"] == "retrieve"
        assert logged["query"] == "how do I switch workspaces"
        assert logged["question"] is True
        assert "workspace" in " ".join(logged["tokens"])
        assert logged["status"] == answer["status"] and logged["phase"] == answer["phase"] == 2
        assert logged["tier"] == "phase2"
        assert [r["doc_slug"] for r in logged["results"]] == [r["doc_slug"] for r in answer["results"]]
        assert logged["results"][0]["score"] == answer["results"][0]["score"]
        assert logged["keyword_matched"] is True
        assert logged["conversation"] is None
        ctx = (await client.get(f"/admin/queries/{context['request_id']}", headers=AUTH)).json()
        assert ctx["endpoint"] == "context" and ctx["query"] == "edit quick links"

        # Deployments that must not keep the text: tokens and decision only.
        r = await client.put("/admin/flags", json={"name": "query_log.store_text", "value": False}, headers=AUTH)
        assert r.status_code == 200, r.text
        hidden = await ask(client, "where are my shortcuts?")
        row = (await client.get(f"/admin/queries/{hidden['request_id']}", headers=AUTH)).json()
        assert row["query"] is None and row["question"] is True and row["tokens"]

        assert (await client.get("/admin/queries/nope", headers=AUTH)).status_code == 404
        assert (await client.get("/admin/queries/%00%C3%A9", headers=AUTH)).status_code == 404
        assert (await client.get("/admin/queries/nope")).status_code == 401


async def test_retention_keeps_the_newest_rows_within_the_age(migrated_pool: asyncpg.Pool[Any]) -> None:
    flags = apply_overrides(Flags(), {"query_log.retention_days": 2, "query_log.retention_rows": 100})
    writer = QueryLogWriter(lambda: migrated_pool, lambda: flags)
    now = datetime.now(UTC)
    await _insert(migrated_pool, [_row(f"old{i}", now - timedelta(days=3)) for i in range(5)]
                  + [_row(f"new{i:03d}", now - timedelta(minutes=i)) for i in range(120)])
    assert await writer.prune(now.timestamp()) == 5 + 20
    left = await migrated_pool.fetch("select request_id from query_log order by at desc")
    assert [r["request_id"] for r in left] == [f"new{i:03d}" for i in range(100)]


async def test_a_batch_being_written_is_still_pending_and_flush_waits_for_its_commit(
    migrated_pool: asyncpg.Pool[Any],
) -> None:
    """Feedback sent the moment an answer arrives must find its log row: while the row's
    batch is being written (off the queue, not committed) it counts as pending, and
    `flush` returns only once it is committed (the soak saw 404s for such feedback)."""
    from service.feedback.records import QueryRecord

    # The writer must still be waiting when we look, however slow the machine: a long timeout.
    flags = apply_overrides(Flags(), {"timeouts.db_ms": 60_000})
    writer = QueryLogWriter(lambda: migrated_pool, lambda: flags)
    writer.submit(QueryRecord(
        request_id="in-flight-1", at=datetime.now(UTC).timestamp(), endpoint="retrieve", query="q",
        question=False, tokens=("q",), unknown_tokens=(), corrections=(), phase=1, tier="phase1",
        status="answer", reason="test", confidence=1.0, keyword_matched=True, results=(), options=(),
        latency_ms=1.0, fallback_path=()))
    async with migrated_pool.acquire() as blocker, blocker.transaction():
        await blocker.execute("lock table query_log in access exclusive mode")
        writing = asyncio.create_task(writer.write_batch())

        async def insert_waits_on_the_lock() -> bool:
            # pg_stat_activity is read once per transaction and then cached: without clearing
            # that snapshot, a first look taken before the writer queued would be repeated forever.
            await blocker.execute("select pg_stat_clear_snapshot()")
            return bool(await blocker.fetchval(
                "select count(*) from pg_stat_activity where wait_event_type = 'Lock'"
                " and backend_type = 'client backend' and datname = current_database()"))

        await eventually(insert_waits_on_the_lock, timeout=30)
        assert not writer.queue and writer.pending("in-flight-1")
        flushing = asyncio.create_task(writer.flush())
        await asyncio.sleep(0)
        assert not flushing.done()
    await flushing  # the lock is gone with the transaction
    assert await writing == 1 and not writer.pending("in-flight-1")
    assert await migrated_pool.fetchval("select count(*) from query_log where request_id = 'in-flight-1'") == 1


async def test_database_stopping_mid_traffic_never_fails_a_request_and_drops_are_counted(
    tmp_path: Path, fixture_seeds: Path
) -> None:
    server = EmbeddedPostgres(tmp_path / "pg")
    dsn = await asyncio.to_thread(server.start)
    flags = _flags_file(tmp_path, query_log={"queue_size": 5, "flush_interval_ms": 50})
    try:
        async with running(dsn, fixture_seeds, flags) as client:
            writer = feedback_of(client).writer
            first = await ask(client, "switch workspaces", phase=1)

            async def written_once() -> bool:
                return writer.written == 1

            await eventually(written_once, timeout=10)
            await asyncio.to_thread(server.stop)
            answers = [await client.post("/retrieve", json={"query": f"quick links {i}", "phase": 1})
                       for i in range(25)]
            assert [a.status_code for a in answers] == [200] * 25
            assert all(a.json()["status"] in ("answer", "clarify", "no_match") for a in answers)
            # The writer holds 5 (queued, or the batch it is retrying); the other 20 were
            # dropped, and /metrics says so.
            assert writer.held == 5 and writer.dropped["queue_full"] == 20
            assert writer.dropped["db_error"] == 0
            metrics = (await client.get("/metrics")).text
            assert re.search(r'query_log_dropped_total\{reason="queue_full"\} 20\.0', metrics), metrics
            fb = await send_feedback(client, request_id=first["request_id"], verdict="helpful")
            assert fb.status_code == 503 and fb.headers["retry-after"] == "5"

            await asyncio.to_thread(server.start)

            async def drained() -> bool:
                return writer.written == 6 and not writer.queue

            await eventually(drained, timeout=30)  # the writer's back-off is at most 5 s
            async with connected(dsn) as pool:
                assert await pool.fetchval("select count(*) from query_log") == 6
    finally:
        await asyncio.to_thread(server.stop)


# -- feedback -----------------------------------------------------------------------
async def test_feedback_recorded_once_per_verdict_404_413_and_400(db_url: str, fixture_seeds: Path) -> None:
    async with running(db_url, fixture_seeds) as client:
        answer = await ask(client, "switch workspaces")
        rid = answer["request_id"]
        # Sent at once: the log row may still be queued; the route writes it first.
        r = await send_feedback(client, request_id=rid, verdict="not_what_i_meant",
                                expected_slug="widgets/quick-links", comment="I wanted the links")
        assert r.status_code == 200, r.text
        assert r.json() == {"request_id": rid, "verdict": "not_what_i_meant", "recorded": True}
        again = await send_feedback(client, request_id=rid, verdict="not_what_i_meant")
        assert again.status_code == 200 and again.json()["recorded"] is False
        other = await send_feedback(client, request_id=rid, verdict="wrong_page")
        assert other.json()["recorded"] is True
        async with connected(db_url) as pool:
            rows = await pool.fetch("select verdict from query_feedback order by id")
        assert [r["verdict"] for r in rows] == ["not_what_i_meant", "wrong_page"]

        missing = await send_feedback(client, request_id="0" * 32, verdict="helpful")
        assert missing.status_code == 404 and "0" * 32 in missing.json()["error"]
        big = await client.post("/feedback", content=json.dumps(
            {"request_id": rid, "verdict": "helpful", "comment": "x" * 20_000}), headers={"content-type": "application/json"})
        assert big.status_code == 413
        long = await send_feedback(client, request_id=rid, verdict="helpful", comment="y" * 1001)
        assert long.status_code == 400 and "comment" in long.json()["error"]
        bad = await send_feedback(client, request_id=rid, verdict="meh")
        assert bad.status_code == 400 and "verdict" in bad.text
        page = await send_feedback(client, request_id=rid, verdict="wrong_page", expected_slug="concepts/calendar")
        assert page.status_code == 400 and "concepts/calendar" in page.json()["error"]
        metrics = (await client.get("/metrics")).text
        assert 'retrieval_feedback_total{verdict="not_what_i_meant"} 1.0' in metrics
        assert 'retrieval_feedback_total{verdict="wrong_page"} 1.0' in metrics


async def test_feedback_is_rate_limited_per_client_with_retry_after(
    db_url: str, fixture_seeds: Path, tmp_path: Path
) -> None:
    flags = _flags_file(tmp_path, feedback={"rate_limit_per_minute": 3})
    async with running(db_url, fixture_seeds, flags) as client:
        rid = (await ask(client, "switch workspaces"))["request_id"]
        codes = [(await send_feedback(client, request_id=rid, verdict="helpful")).status_code for _ in range(3)]
        assert codes == [200, 200, 200]
        limited = await send_feedback(client, request_id=rid, verdict="helpful")
        assert limited.status_code == 429
        assert 1 <= int(limited.headers["retry-after"]) <= 60
        assert limited.json()["error"]
        # Retrieval is not behind the feedback limiter.
        assert (await client.post("/retrieve", json={"query": "home"})).status_code == 200
        # An operator raising the limit at run time lets the same client through at once.
        raised = await client.put("/admin/flags", json={"feedback.rate_limit_per_minute": 10}, headers=AUTH)
        assert raised.status_code == 200, raised.text
        assert (await send_feedback(client, request_id=rid, verdict="helpful")).status_code == 200


# -- review queue ---------------------------------------------------------------------------
def _row(rid: str, at: datetime, *, status: str = "answer", phase: int = 1, keyword: bool | None = True,
         question: bool = False, unknown: tuple[str, ...] = (), latency: float = 1.0,
         top: str = "concepts/workspace", query: str | None = "switch workspaces") -> tuple[Any, ...]:
    results = [{"doc_slug": top, "title": top, "header_path": None, "chunk_index": None, "score": 1.0,
                "matched_terms": [], "source": "keyword"}] if status != "no_match" else []
    return (rid, at, "retrieve", query, question, ["switch", "workspace"], list(unknown), phase,
            f"phase{phase}", status, "test", 0.9, keyword, json.dumps(results), latency)


async def _insert(pool: asyncpg.Pool[Any], rows: list[tuple[Any, ...]]) -> None:
    await pool.executemany(
        "insert into query_log (request_id, at, endpoint, query, question, tokens, unknown_tokens, phase,"
        " tier, status, reason, confidence, keyword_matched, results, latency_ms)"
        " values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::jsonb, $15)", rows)


async def test_review_sample_is_reproducible_per_period(db_url: str, fixture_seeds: Path,
                                                        tmp_path: Path) -> None:
    flags = _flags_file(tmp_path, review={"sample_size": 5, "period": "week"})
    async with running(db_url, fixture_seeds, flags) as client:
        monday = datetime(2026, 11, 9, tzinfo=UTC)
        week = [_row(f"w{i:02d}", monday + timedelta(hours=5 * i)) for i in range(30)]
        week += [_row(f"c{i}", monday + timedelta(hours=1), status="clarify") for i in range(5)]
        async with connected(db_url) as pool:
            await _insert(pool, week)

        async def sample(day: str) -> dict[str, Any]:
            r = await client.get(f"/admin/review?period={day}", headers=AUTH)
            assert r.status_code == 200, r.text
            body: dict[str, Any] = r.json()
            return body

        first = await sample("2026-11-11")
        ids = [item["request_id"] for item in first["items"]]
        assert len(ids) == 5 and all(i.startswith("w") for i in ids)  # answered queries only
        assert first["start"].startswith("2026-11-09") and first["seed"] == "week:2026-11-09"
        assert ids != sorted(ids)[:5] or ids != [f"w{i:02d}" for i in range(5)]  # not simply the first rows
        # Any day of the week names the same sample; asking again gives the same one.
        assert [i["request_id"] for i in (await sample("2026-11-15"))["items"]] == ids
        # Traffic in another week does not change this week's sample.
        async with connected(db_url) as pool:
            await _insert(pool, [_row(f"x{i}", monday + timedelta(days=8, hours=i)) for i in range(10)])
        assert [i["request_id"] for i in (await sample("2026-11-09"))["items"]] == ids
        other = [i["request_id"] for i in (await sample("2026-11-17"))["items"]]
        assert other and all(i.startswith("x") for i in other)
        item = first["items"][0]
        assert item["results"][0]["doc_slug"] == "concepts/workspace" and item["status"] == "answer"
        assert item["feedback"] == [] and item["review"] is None
        assert (await client.get("/admin/review?period=tuesday", headers=AUTH)).status_code == 400
        assert (await client.get("/admin/review")).status_code == 401


async def test_reviews_are_stored_with_an_audit_trail(db_url: str, fixture_seeds: Path) -> None:
    async with running(db_url, fixture_seeds) as client:
        rid = (await ask(client, "switch workspaces"))["request_id"]
        await send_feedback(client, request_id=rid, verdict="wrong_page")
        r1 = await client.post(f"/admin/review/{rid}", json={"verdict": "right"}, headers=AUTH)
        assert r1.status_code == 200, r1.text
        r2 = await client.post(f"/admin/review/{rid}", json={"verdict": "should_be", "expected_slug":
                                                              "actions/navigation", "note": "bar, not widget"},
                               headers=AUTH)
        assert r2.status_code == 200, r2.text
        history = r2.json()["history"]
        assert [h["verdict"] for h in history] == ["right", "should_be"]
        assert all(h["reviewer"] == "admin@testclient" and h["at"] for h in history)
        logged = (await client.get(f"/admin/queries/{rid}", headers=AUTH)).json()
        assert logged["review"]["verdict"] == "should_be" and logged["reviews"] == 2
        assert logged["review"]["expected_slug"] == "actions/navigation"
        assert [f["verdict"] for f in logged["feedback"]] == ["wrong_page"]

        no_slug = await client.post(f"/admin/review/{rid}", json={"verdict": "should_be"}, headers=AUTH)
        assert no_slug.status_code == 400 and "expected_slug" in no_slug.json()["error"]
        gone = await client.post(f"/admin/review/{rid}", json={"verdict": "should_be", "expected_slug": "a/b"},
                                 headers=AUTH)
        assert gone.status_code == 400 and "a/b" in gone.json()["error"]
        unknown = await client.post("/admin/review/" + "f" * 32, json={"verdict": "right"}, headers=AUTH)
        assert unknown.status_code == 404
        assert (await client.post(f"/admin/review/{rid}", json={"verdict": "right"})).status_code == 401
        async with connected(db_url) as pool:
            assert await pool.fetchval("select count(*) from query_reviews") == 2


# -- golden export ----------------------------------------------------------------------------
async def test_export_then_replay_passes_and_refuses_removed_pages(
    db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "seeds"
    shutil.copytree(PROJECT_ROOT / "tests" / "fixtures" / "seeds", seeds)
    async with running(db_url, seeds) as client:
        right = await ask(client, "switch workspaces", phase=2)
        helpful = await ask(client, "edit quick links", phase=1)
        should = await ask(client, "going home", phase=1)
        secret = await ask(client, "opening an entry", phase=1)
        assert right["status"] == helpful["status"] == "answer"
        top = should["results"][0]["doc_slug"]
        await client.post(f"/admin/review/{right['request_id']}", json={"verdict": "right"}, headers=AUTH)
        await send_feedback(client, request_id=helpful["request_id"], verdict="helpful")
        await client.post(f"/admin/review/{should['request_id']}",
                          json={"verdict": "should_be", "expected_slug": top}, headers=AUTH)
        await client.put("/admin/flags", json={"query_log.store_text": False}, headers=AUTH)
        hidden = await ask(client, "switch workspaces", phase=1)
        await send_feedback(client, request_id=hidden["request_id"], verdict="helpful")
        await client.put("/admin/flags", json={"query_log.store_text": True}, headers=AUTH)
        assert secret["request_id"]  # never reviewed: not exported

        exported = await client.get("/admin/goldens/export", headers=AUTH)
        assert exported.status_code == 200 and exported.headers["content-type"].startswith("application/yaml")
        cases = parse_golden(exported.text, "export")
        assert [c.query for c in cases] == ["switch workspaces", "edit quick links", "going home"]
        assert cases[0].phases == [2] and cases[0].expect.top == right["results"][0]["doc_slug"]
        assert "text not stored" in exported.text

        async def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            r = await client.post("/retrieve", json=body)
            return r.status_code, r.json()

        results = await replay_cases(cases, post)
        assert [r.failures for r in results] == [[], [], []]

        # The CLI writes the same file from the database.
        out = tmp_path / "traffic.yaml"
        settings = Settings(database_url=db_url, seeds_dir=seeds, migrations_dir=PROJECT_ROOT / "migrations")
        code = await asyncio.to_thread(command.run, argparse.Namespace(out=out, data_dir=None), settings)
        assert code == 0 and out.read_text(encoding="utf-8") == exported.text

        # A later seed removes the page a case expects: that case is refused, by name.
        (seeds / "actions" / "navigation.md").unlink()
        assert (await run_job(client, "/admin/seed", AUTH))["state"] == "done"
        later = (await client.get("/admin/goldens/export", headers=AUTH)).text
        assert top == "actions/navigation"
        assert [c.query for c in parse_golden(later, "later")] == ["switch workspaces", "edit quick links"]
        assert (f"# refused {should['request_id']}: page actions/navigation is no longer in the corpus"
                in later.splitlines())


# -- insights --------------------------------------------------------------------------------
async def test_insights_figures_and_phase_triggers_for_a_known_traffic_mix(
    db_url: str, fixture_seeds: Path, tmp_path: Path
) -> None:
    # Configured at phase 1, so that advising phase 2 is advice (at phase 3 it would not be:
    # tests/integration/test_operator_edges.py).
    flags = yaml.safe_load((PROJECT_ROOT / "flags.yaml").read_text(encoding="utf-8")) or {}
    (tmp_path / "flags.yaml").write_text(yaml.safe_dump({**flags, "phase": 1}), encoding="utf-8")
    async with running(db_url, fixture_seeds, tmp_path / "flags.yaml") as client:
        at = datetime.now(UTC) - timedelta(hours=1)
        rows: list[tuple[Any, ...]] = []
        # 40 queries: 26 answers, 8 clarify, 6 no match; keyword leg matched 24 of 40.
        for i in range(40):
            status = "answer" if i < 26 else "clarify" if i < 34 else "no_match"
            rows.append(_row(f"q{i:02d}", at, status=status, keyword=i < 24, phase=1 if i % 2 else 2,
                             latency=float(i + 1), question=i >= 30,
                             unknown=("email",) if i >= 36 else ()))
        rows.append(_row("disabled", at, status="disabled", keyword=None))
        rows.append(_row("old", at - timedelta(days=30)))
        reviews = [(f"q{i:02d}", "right" if i < 14 else "wrong") for i in range(20)]
        reviews.append(("q00", "wrong"))  # a later review of q00 overrides its "right"
        async with connected(db_url) as pool:
            await _insert(pool, rows)
            await pool.executemany(
                "insert into query_feedback (request_id, verdict) values ($1, $2)",
                [("q01", "not_what_i_meant"), ("q02", "not_what_i_meant"), ("q02", "wrong_page")])
            for rid, verdict in reviews:
                await pool.execute(
                    "insert into query_reviews (request_id, verdict, reviewer) values ($1, $2, 't')", rid, verdict)
        r = await client.get("/admin/insights?window=24h", headers=AUTH)
        assert r.status_code == 200, r.text
        body = r.json()
        rates = body["rates"]
        assert rates["keyword_match_rate"] == {"rate": 0.6, "count": 24, "of": 40}
        assert rates["clarify_rate"] == {"rate": 0.2, "count": 8, "of": 40}
        assert rates["no_match_rate"] == {"rate": 0.15, "count": 6, "of": 40}
        assert rates["not_what_i_meant_rate"] == {"rate": 0.05, "count": 2, "of": 40}
        assert rates["reviewed_precision"] == {"rate": 0.65, "count": 13, "of": 20}
        assert rates["typo_failure_rate"] == {"rate": 0.1, "count": 4, "of": 40}
        assert rates["question_failure_rate"] == {"rate": 1.0, "count": 10, "of": 10}
        latency = {p["phase"]: p for p in body["latency_by_phase"]}
        # phase 1: latencies 2, 4, ..., 40 (odd i); phase 2: 1, 3, ..., 39 (percentile_cont interpolates).
        assert latency[1]["n"] == 20 and latency[1]["p50_ms"] == 21.0 and latency[1]["p95_ms"] == 38.1
        assert latency[2]["p50_ms"] == 20.0 and latency[2]["p95_ms"] == 37.1
        texts = [t["text"] for t in body["triggers"] if t["fired"]]
        assert "keyword match rate 60 % < 70 % (24/40): consider phase 2" in texts
        assert "reviewed precision 65 % < 80 % (13/20): consider phase 2" in texts
        # 10 questions < min_samples 20: the two question triggers give no verdict, and say why.
        quiet = [t for t in body["triggers"] if t["fired"] is None]
        assert [t["phase"] for t in quiet] == [3, 3]
        assert quiet[0]["text"] == ("\"how do I…\" questions failing (clarify or no match): "
                                    "10 samples < 20: not enough data")
        typo = next(t for t in body["triggers"] if t["metric"].startswith("synonym/typo"))
        assert typo["fired"] is False and typo["text"].startswith("synonym/typo failures")
        assert sum(point["queries"] for point in body["series"]) == 40
        bad = await client.get("/admin/insights?window=forever", headers=AUTH)
        assert bad.status_code == 400 and "window" in bad.json()["error"]
