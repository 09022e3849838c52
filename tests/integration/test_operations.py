"""Operations on a real PostgreSQL with real failures: runtime flags, kill switch, outages.

Every test builds its own app (the shared `service_client` must never have its
flags flipped). Failures are real: a stopped server, a table lock, `pg_sleep`
on the service's own pool, a killed LISTEN backend.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import msgspec
import pytest
from litestar.testing import AsyncTestClient

from service.api.schemas import RetrieveResponse
from service.app import create_app
from service.db.embedded import EmbeddedPostgres
from service.flags import FlagError
from service.pipeline import TierContext, TierFaults
from service.settings import PROJECT_ROOT, Settings
from service.state import get_state
from tests.conftest import logged_messages, quiet_flags_file, wait_until_ready

TOKEN = "ops-test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
QUERIES = ["explain workspace", "how do I edit quick links", "go home", "what is a workspace",
           "switch workspaces", "quick links shortcuts"]


SHIPPED_FLAGS = PROJECT_ROOT / "flags.yaml"


def _settings(db_url: str, seeds: Path, flags_file: Path | None = None) -> Settings:
    return Settings(
        database_url=db_url, seeds_dir=seeds, admin_token=TOKEN,
        migrations_dir=PROJECT_ROOT / "migrations",
        flags_file=flags_file or quiet_flags_file(), db_connect_timeout=30,
    )


@asynccontextmanager
async def running(
    db_url: str, seeds: Path, *, semantic: bool = False, flags_file: Path | None = None,
    faults: TierFaults | None = None,
) -> AsyncIterator[Any]:
    """An app of this test's own; the kill switch is out of reach unless `flags_file` says otherwise.
    `faults`: the test's way into every tier (`TierFaults.before_tier`)."""
    app = create_app(_settings(db_url, seeds, flags_file), faults=faults)
    async with AsyncTestClient(app=app, timeout=60) as client:
        await wait_until_ready(client, semantic=semantic)
        yield client


async def retrieve(client: Any, query: str = "explain workspace", **extra: Any) -> RetrieveResponse:
    response = await client.post("/retrieve", json={"query": query, **extra})
    assert response.status_code == 200, response.text
    return msgspec.json.decode(response.content, type=RetrieveResponse)


async def put_flags(client: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.put("/admin/flags", json=body, headers=AUTH)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def admin_flags(client: Any) -> dict[str, Any]:
    response = await client.get("/admin/flags", headers=AUTH)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def entry(body: dict[str, Any], name: str) -> dict[str, Any]:
    return next(e for e in body["flags"] if e["name"] == name)


async def eventually(check: Callable[[], Any], timeout: float, interval: float = 0.02) -> float:
    """Seconds until `await check()` is truthy; fails after `timeout`."""
    started = time.monotonic()
    while True:
        if await check():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(interval)


# -- flags.yaml and override validation ---------------------------------------
@pytest.mark.parametrize(("yaml_text", "named"), [
    ("kill_switch:\n  p95_ms: -5\n", "kill_switch.p95_ms"),
    ("phase: 7\n", "phase"),
    ("timeouts:\n  db_ms: fast\n", "timeouts.db_ms"),
    ("kill_switch:\n  p95: 100\n", "p95"),
])
def test_bad_flags_yaml_stops_start_up_naming_the_key(tmp_path: Path, yaml_text: str, named: str) -> None:
    flags_file = tmp_path / "flags.yaml"
    flags_file.write_text(yaml_text)
    with pytest.raises(FlagError, match=f"`{named}`"):
        create_app(_settings("postgresql://unused@/x", tmp_path, flags_file))


async def test_overrides_validated_stored_audited_and_dropped(db_url: str, fixture_seeds: Path) -> None:
    async with running(db_url, fixture_seeds) as client:
        bad = [
            ({"name": "phase", "value": 7}, "phase"),
            ({"name": "no.such.flag", "value": 1}, "no.such.flag"),
            ({"kill_switch.error_rate": "lots"}, "kill_switch.error_rate"),
            ({"name": "fusion.method", "value": "magic"}, "fusion.method"),
        ]
        for body, field in bad:
            response = await client.put("/admin/flags", json=body, headers=AUTH)
            assert response.status_code == 400, response.text
            assert f"`{field}`" in response.json()["error"]
            assert [problem["field"] for problem in response.json()["detail"]] == [field]
        assert (await client.put("/admin/flags", json={"phase": 1})).status_code == 401

        assert entry(await admin_flags(client), "phase") == {"name": "phase", "value": 3, "source": "file"}
        # A string is not a phase: no silent coercion (issue 14, item 9).
        refused = await client.put("/admin/flags", json={"name": "phase", "value": "1"}, headers=AUTH)
        assert refused.status_code == 400 and "Expected `int`, got `str`" in refused.json()["error"]
        changed = await put_flags(client, {"name": "phase", "value": 1})
        assert changed["changed"] == [{"name": "phase", "old_value": None, "new_value": 1}]
        assert (await retrieve(client, "explain workspace")).phase == 1
        body = await admin_flags(client)
        assert entry(body, "phase") == {"name": "phase", "value": 1, "source": "override"}
        assert body["audit"][0]["name"] == "phase" and body["audit"][0]["new_value"] == 1
        assert body["audit"][0]["action"] == "set" and body["audit"][0]["actor_address"]

        response = await client.delete("/admin/flags/phase", headers=AUTH)
        assert response.status_code == 200 and response.json()["old_value"] == 1
        assert (await client.delete("/admin/flags/phase", headers=AUTH)).status_code == 404
        assert entry(await admin_flags(client), "phase")["source"] == "file"


async def test_overrides_survive_a_restart(db_url: str, fixture_seeds: Path) -> None:
    async with running(db_url, fixture_seeds) as client:
        await put_flags(client, {"phase": 2, "retrieval.default_top_k": 1})
    async with running(db_url, fixture_seeds) as client:
        body = await admin_flags(client)
        assert entry(body, "phase")["value"] == 2 and entry(body, "phase")["source"] == "override"
        assert entry(body, "retrieval.default_top_k")["value"] == 1
        answer = await retrieve(client, "explain workspace")
        assert answer.phase == 2 and len(answer.results) <= 1


# -- replicas -------------------------------------------------------------------
async def test_flag_flipped_on_one_replica_is_in_force_on_the_other(
    db_url: str, fixture_seeds: Path
) -> None:
    async with running(db_url, fixture_seeds) as a, running(db_url, fixture_seeds) as b:
        await eventually(lambda: _listening(b), timeout=10)
        assert (await retrieve(b, phase=2)).phase == 2
        await put_flags(a, {"name": "phase", "value": 1})

        async def b_serves_phase_1() -> bool:
            return (await retrieve(b, phase=2)).phase == 1

        # Pushed by NOTIFY (b never re-reads on its own); the bound is generous so
        # a busy machine cannot fail it: it proves delivery, not speed.
        await eventually(b_serves_phase_1, timeout=30)

        await put_flags(a, {"enabled": False})

        async def b_disabled() -> bool:
            return (await retrieve(b)).status == "disabled"

        await eventually(b_disabled, timeout=30)

        # A notification the replica cannot receive (its LISTEN backend is
        # killed, and the change is written without NOTIFY): it resynchronises
        # when it reconnects.
        store_b = b.app.state["operations"].store
        old_pid = store_b.listener_pid
        async with _connect(db_url) as conn:
            await conn.execute("insert into flag_overrides (name, value) values ('phase', '2')"
                               " on conflict (name) do update set value = excluded.value")
            await conn.execute("delete from flag_overrides where name = 'enabled'")
            await conn.execute("select pg_terminate_backend($1)", old_pid)

        async def resynced() -> bool:
            return store_b.listener_pid != old_pid and store_b.current.phase == 2 and store_b.current.enabled

        await eventually(resynced, timeout=10)
        assert (await retrieve(b, phase=3)).phase == 2


async def _listening(client: Any) -> bool:
    return bool(client.app.state["operations"].store.listener_connected)


@asynccontextmanager
async def _connect(dsn: str) -> AsyncIterator[asyncpg.Connection[Any]]:
    conn = await asyncpg.connect(dsn)
    try:
        yield conn
    finally:
        await conn.close()


# -- kill switches -----------------------------------------------------------------
async def test_database_errors_above_five_percent_take_phase3_out_kill_and_reset(
    db_url: str, fixture_seeds: Path
) -> None:
    """A lock held by another connection makes phase 3 time out (a real DB error)."""
    async with running(db_url, fixture_seeds, semantic=True, flags_file=SHIPPED_FLAGS) as client:
        assert (await retrieve(client)).phase == 3
        await put_flags(client, {"timeouts.db_ms": 150, "kill_switch.min_samples": 8,
                                 "kill_switch.cooldown_s": 3600})
        assert (await client.post("/admin/reset", headers=AUTH)).status_code == 200  # fresh windows
        async with _connect(db_url) as locker:
            tx = locker.transaction()
            await tx.start()
            await locker.execute("lock table chunk_embeddings in access exclusive mode")
            seen = [await retrieve(client, QUERIES[i % len(QUERIES)]) for i in range(10)]
            body = await admin_flags(client)  # while the database is still locked
            await tx.rollback()
        # The first 8 fell back (phase 3 timed out) and were answered by phase 2; then
        # the switch took phase 3 out: phases 1-2 answer from memory, saying why.
        for response in seen[:8]:
            assert response.phase == 2
            assert [(s.tier, s.reason) for s in response.fallback_path] == [
                ("phase3", "database timeout after 150 ms")]
        for response in seen[8:]:
            assert response.status != "disabled" and response.phase == 2
            assert response.fallback_path[0].tier == "phase3"
            assert response.fallback_path[0].reason == (
                "kill switch: error rate 100.0% > 5.0% over 300 s (phase 3, 8 samples)")
        ks = body["kill_switch"]
        assert ks["state"] == "tripped" and ks["ceiling"] == 2
        assert ks["events"][0]["trigger"] == "error_rate" and ks["events"][0]["window"]["error_rate"] == 1.0
        assert entry(body, "phase")["source"] == "kill_switch" and entry(body, "phase")["value"] == 2
        assert entry(body, "enabled")["value"] is True

        # The database answers again: a trip it caused probes at once (no 1-hour cool-down).
        async def half_open_on_database_back() -> bool:
            return bool((await admin_flags(client))["kill_switch"]["state"] == "half_open")

        await eventually(half_open_on_database_back, timeout=15, interval=0.1)
        events = (await admin_flags(client))["kill_switch"]["events"]
        assert [(e["kind"], e["trigger"]) for e in events[:2]] == [
            ("half_open", "database_back"), ("trip", "error_rate")]

        # The seed plan's literal rule stays selectable.
        await wait_until_ready(client, semantic=False)
        await put_flags(client, {"kill_switch.error_action": "disable"})
        assert (await client.post("/admin/reset", headers=AUTH)).status_code == 200
        async with _connect(db_url) as locker:
            tx = locker.transaction()
            await tx.start()
            await locker.execute("lock table chunk_embeddings in access exclusive mode")
            seen = [await retrieve(client, QUERIES[i % len(QUERIES)]) for i in range(10)]
            await tx.rollback()
        assert [r.status for r in seen[8:]] == ["disabled", "disabled"]
        await wait_until_ready(client, semantic=False)
        await put_flags(client, {"kill_switch.error_action": "drop_phase"})

        reset = await client.post("/admin/reset", headers=AUTH)
        assert reset.status_code == 200 and reset.json()["state"] == "closed"
        assert (await retrieve(client)).phase == 3

        killed = await client.post("/admin/kill", json={"reason": "drill"}, headers=AUTH)
        assert killed.status_code == 200 and killed.json()["state"] == "manual"
        off = await retrieve(client)
        assert off.status == "disabled" and off.source_tier == "generic" and off.message
        assert (await client.post("/admin/kill", headers=AUTH)).status_code == 200  # no body
        assert (await client.post("/admin/reset", headers=AUTH)).json()["state"] == "closed"
        assert (await retrieve(client)).phase == 3

        metrics = (await client.get("/metrics")).text
        assert 'kill_switch_events_total{kind="trip",reason="error_rate"' in metrics
        assert 'kill_switch_events_total{kind="half_open",reason="database_back"' in metrics
        assert 'retrieval_fallbacks_total{reason="timeout",tier="phase3"' in metrics
        assert 'retrieval_decisions_total{decision="disabled"' in metrics
        assert "retrieval_latency_ms_bucket" in metrics


async def test_slow_database_drops_a_phase_then_disables_then_recovers(
    db_url: str, fixture_seeds: Path
) -> None:
    """Latency trips and their cool-down, step by step through the state machine's
    real states (closed → tripped → tripped → half_open → closed); no sleeps: the
    cool-down is ended by setting it to 0, as an operator could."""
    faults = TierFaults()
    async with running(db_url, fixture_seeds, semantic=True, flags_file=SHIPPED_FLAGS, faults=faults) as client:
        # Slow = a 1.6 s database wait against a 1.5 s p95 limit: a busy machine cannot
        # make a healthy request look slow, nor a slow one fast.
        # short_window_s 0: six slow requests (~10 s) trip at once, without the
        # minute a sustained breach needs by default (tests/unit/test_kill_switch.py).
        await put_flags(client, {"kill_switch.p95_ms": 1500, "kill_switch.min_samples": 6,
                                 "kill_switch.window_s": 3600, "kill_switch.short_window_s": 0, "kill_switch.cooldown_s": 3600,
                                 "kill_switch.probe_share": 1.0, "timeouts.phase_ms": 30000,
                                 "timeouts.db_ms": 30000})
        pool = get_state(client.app.state).pool
        assert pool is not None
        slow_tiers = {"phase3", "phase2"}

        async def slow_database(tier: str, _ctx: TierContext) -> None:
            if tier in slow_tiers:
                await pool.execute("select pg_sleep(1.6)")

        async def state() -> tuple[str, int | None]:
            ks = (await admin_flags(client))["kill_switch"]
            return ks["state"], ks["ceiling"]

        faults.before_tier = slow_database
        phases = [(await retrieve(client, QUERIES[i % len(QUERIES)])).phase for i in range(6)]
        assert phases == [3] * 6  # slow but answered
        assert await state() == ("tripped", 2)
        dropped = await retrieve(client)
        assert dropped.phase == 2
        assert [s.tier for s in dropped.fallback_path] == ["phase3"]  # taken out, and says so
        reason = dropped.fallback_path[0].reason
        assert reason.startswith("kill switch: p95 ") and "> 1500 ms over " in reason and "(phase 3, " in reason, reason
        for _ in range(5):
            assert (await retrieve(client)).phase == 2  # the 6th slow phase-2 sample trips again
        assert await state() == ("tripped", 0)
        body = await admin_flags(client)
        assert [e["trigger"] for e in body["kill_switch"]["events"][:2]] == ["p95_still_breached", "p95"]
        assert (await retrieve(client)).status == "disabled"
        # A latency trip keeps its cool-down even though the database answers all along.
        assert await state() == ("tripped", 0)

        # The database is healthy again; the cool-down ends; probes restore phase 3.
        faults.before_tier = None
        await put_flags(client, {"kill_switch.cooldown_s": 0})
        assert await state() == ("half_open", 0)
        probes = [await retrieve(client, QUERIES[i % len(QUERIES)]) for i in range(6)]
        assert all(r.phase == 3 for r in probes), [r.phase for r in probes]
        assert await state() == ("closed", None)
        body = await admin_flags(client)
        assert [(e["kind"], e["trigger"]) for e in body["kill_switch"]["events"][:4]] == [
            ("recover", "probe_ok"), ("half_open", "cooldown"), ("trip", "p95_still_breached"),
            ("trip", "p95")]
        assert entry(body, "phase")["source"] == "file"  # no kill-switch cap any more


async def test_database_outage_never_5xx_and_phase3_returns_after_restart(
    tmp_path: Path, fixture_seeds: Path
) -> None:
    server = EmbeddedPostgres(tmp_path / "pg")
    dsn = await asyncio.to_thread(server.start)
    try:
        async with running(dsn, fixture_seeds, semantic=True, flags_file=SHIPPED_FLAGS) as client:
            await put_flags(client, {"kill_switch.cooldown_s": 1, "kill_switch.probe_share": 1.0,
                                     "kill_switch.min_samples": 5})
            assert (await retrieve(client)).phase == 3
            responses: list[tuple[int, bytes]] = []
            stop = asyncio.Event()

            async def traffic() -> None:
                i = 0
                while not stop.is_set():
                    r = await client.post("/retrieve", json={"query": QUERIES[i % len(QUERIES)]})
                    responses.append((r.status_code, r.content))
                    i += 1
                    await asyncio.sleep(0.01)

            load = asyncio.create_task(traffic())
            await asyncio.sleep(0.3)
            await asyncio.to_thread(server.stop)
            await asyncio.sleep(2.0)
            stop.set()
            await load
            during = len(responses)
            assert during > 10
            for status, content in responses:
                assert status == 200, content
                body = msgspec.json.decode(content, type=RetrieveResponse)
                assert body.status in ("answer", "clarify", "no_match", "disabled")
                if body.status != "disabled":
                    assert body.phase in (0, 1, 2, 3)
            served = [msgspec.json.decode(c, type=RetrieveResponse) for _, c in responses]
            assert any(r.fallback_path and r.fallback_path[0].tier == "phase3" for r in served)
            assert (await client.get("/health")).status_code == 200

            await asyncio.to_thread(server.start)

            async def phase3_back() -> bool:
                r = await retrieve(client)
                return r.phase == 3 and not r.fallback_path

            await eventually(phase3_back, timeout=30, interval=0.1)
            await wait_until_ready(client, semantic=False)  # the supervisor has seen it back
            await put_flags(client, {"phase": 2})  # the store writes again too
            assert (await retrieve(client)).phase == 2
    finally:
        await asyncio.to_thread(server.stop)


async def test_metrics_and_trace_id_in_query_log(db_url: str, fixture_seeds: Path) -> None:
    import logging

    async with running(db_url, fixture_seeds) as client:
        with logged_messages("service.query", logging.INFO) as messages:
            await retrieve(client, "explain workspace", phase=2)
        message = next(m for m in messages if '"event": "retrieve"' in m)
        logged = msgspec.json.decode(message)
        assert len(logged["trace_id"]) == 32 and logged["trace_id"] != "0" * 32
        response = await client.get("/metrics")
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
        text = response.text
        assert 'retrieval_latency_ms_count{phase="2",status="answer"' in text
        assert "keyword_queries_total" in text and "keyword_matched_queries_total" in text
        assert 'retrieval_decisions_total{decision="answer"' in text


async def test_metrics_count_requests_per_route_and_status_including_client_errors(
    db_url: str, fixture_seeds: Path
) -> None:
    """The ASGI instrumentation sees every response, the ones Litestar refuses before
    a handler runs (413, 415) included, labelled by route template and status code."""
    async with running(db_url, fixture_seeds) as client:
        await retrieve(client, "explain workspace", phase=2)
        assert (await client.post("/retrieve", json={"query": ""})).status_code == 400
        too_big = await client.post("/retrieve", content=b'{"query": "' + b"x" * 20_000 + b'"}',
                                    headers={"content-type": "application/json"})
        assert too_big.status_code == 413
        assert (await client.get("/documents/no-such-page")).status_code == 404
        text = (await client.get("/metrics")).text
    counts: dict[tuple[str, str, str], float] = {}
    for line in text.splitlines():
        if line.startswith("http_server_duration_milliseconds_count{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            key = (labels["http_method"], labels.get("http_target", ""), labels["http_status_code"])
            counts[key] = float(line.rsplit(" ", 1)[1])
    assert counts[("POST", "/retrieve", "200")] == 1
    assert counts[("POST", "/retrieve", "400")] == 1
    assert counts[("POST", "/retrieve", "413")] == 1
    # One series per route template, not one per page asked for.
    assert counts[("GET", "/documents/{slug}", "404")] == 1


async def test_traces_have_a_server_span_per_request_with_database_spans_inside(
    db_url: str, fixture_seeds: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    from service.operations import OPS_KEY

    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_on")  # no exporter configured: sampling is off otherwise
    # asyncpg's instrumentation is process-wide and bound to the first app's provider:
    # start this test's app unbound so its provider gets the database spans.
    AsyncPGInstrumentor().uninstrument()  # type: ignore[no-untyped-call]
    try:
        async with running(db_url, fixture_seeds) as client:
            exporter = InMemorySpanExporter()
            client.app.state[OPS_KEY].telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
            await put_flags(client, {"retrieval.default_top_k": 4})
            spans = exporter.get_finished_spans()
    finally:
        AsyncPGInstrumentor().uninstrument()  # type: ignore[no-untyped-call]
    server = next(s for s in spans if s.kind == SpanKind.SERVER and "/admin/flags" in s.name)
    assert server.attributes is not None and server.attributes.get("http.status_code") == 200
    assert server.context is not None
    database = [s for s in spans if s.attributes and s.attributes.get("db.system") == "postgresql"
                and s.context is not None and s.context.trace_id == server.context.trace_id]
    assert database, [s.name for s in spans]
