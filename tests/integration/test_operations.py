"""Operations on a real PostgreSQL with real failures: runtime flags, kill switch, outages.

Every test builds its own app (the shared `service_client` must never have its
flags flipped). Failures are real: a stopped server, a table lock, `pg_sleep`
on the service's own pool, a killed LISTEN backend.
"""

from __future__ import annotations

import asyncio
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
from service.pipeline import Pipeline, TierContext
from service.settings import PROJECT_ROOT, Settings
from service.state import get_state
from tests.conftest import wait_until_ready

TOKEN = "ops-test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
QUERIES = ["explain workspace", "how do I edit quick links", "go home", "what is a workspace",
           "switch workspaces", "quick links shortcuts"]


def _settings(db_url: str, seeds: Path, flags_file: Path | None = None) -> Settings:
    return Settings(
        database_url=db_url, seeds_dir=seeds, admin_token=TOKEN,
        migrations_dir=PROJECT_ROOT / "migrations",
        flags_file=flags_file or PROJECT_ROOT / "flags.yaml", db_connect_timeout=30,
    )


@asynccontextmanager
async def running(db_url: str, seeds: Path, *, semantic: bool = False) -> AsyncIterator[Any]:
    app = create_app(_settings(db_url, seeds))
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


def pipeline_of(client: Any) -> Pipeline:
    pipeline: Pipeline = client.app.state["pipeline"]
    return pipeline


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
            assert response.json()["detail"] == [{"field": field}]
        assert (await client.put("/admin/flags", json={"phase": 1})).status_code == 401

        assert entry(await admin_flags(client), "phase") == {"name": "phase", "value": 3, "source": "file"}
        changed = await put_flags(client, {"name": "phase", "value": "1"})
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
async def test_flag_flipped_on_one_replica_is_in_force_on_the_other_within_a_second(
    db_url: str, fixture_seeds: Path
) -> None:
    async with running(db_url, fixture_seeds) as a, running(db_url, fixture_seeds) as b:
        await eventually(lambda: _listening(b), timeout=10)
        assert (await retrieve(b, phase=2)).phase == 2
        await put_flags(a, {"name": "phase", "value": 1})

        async def b_serves_phase_1() -> bool:
            return (await retrieve(b, phase=2)).phase == 1

        assert await eventually(b_serves_phase_1, timeout=1.0) < 1.0

        await put_flags(a, {"enabled": False})

        async def b_disabled() -> bool:
            return (await retrieve(b)).status == "disabled"

        assert await eventually(b_disabled, timeout=1.0) < 1.0

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
async def test_database_errors_above_five_percent_disable_retrieval_kill_and_reset(
    db_url: str, fixture_seeds: Path
) -> None:
    """A lock held by another connection makes phase 3 time out (a real DB error)."""
    async with running(db_url, fixture_seeds, semantic=True) as client:
        assert (await retrieve(client)).phase == 3
        await put_flags(client, {"timeouts.db_ms": 150, "kill_switch.min_samples": 8,
                                 "kill_switch.cooldown_s": 3600})
        assert (await client.post("/admin/reset", headers=AUTH)).status_code == 200  # fresh windows
        async with _connect(db_url) as locker:
            tx = locker.transaction()
            await tx.start()
            await locker.execute("lock table chunk_embeddings in access exclusive mode")
            seen = [await retrieve(client, QUERIES[i % len(QUERIES)]) for i in range(10)]
            await tx.rollback()
        # The first 8 fell back (phase 3 timed out) and were answered; then the switch tripped.
        for response in seen[:8]:
            assert response.status != "disabled"
            assert response.fallback_path[0].tier == "phase3"
            assert "timeout" in response.fallback_path[0].reason.lower()
        assert [r.status for r in seen[8:]] == ["disabled", "disabled"]
        body = await admin_flags(client)
        ks = body["kill_switch"]
        assert ks["state"] == "tripped" and ks["ceiling"] == 0
        assert ks["events"][0]["trigger"] == "error_rate" and ks["events"][0]["window"]["error_rate"] == 1.0
        assert entry(body, "enabled")["source"] == "kill_switch" and entry(body, "enabled")["value"] is False

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
        assert 'retrieval_fallbacks_total{reason="timeout",tier="phase3"' in metrics
        assert 'retrieval_decisions_total{decision="disabled"' in metrics
        assert "retrieval_latency_ms_bucket" in metrics


async def test_slow_database_drops_a_phase_then_disables_then_recovers(
    db_url: str, fixture_seeds: Path
) -> None:
    async with running(db_url, fixture_seeds, semantic=True) as client:
        await put_flags(client, {"kill_switch.p95_ms": 400, "kill_switch.min_samples": 6,
                                 "kill_switch.window_s": 120, "kill_switch.cooldown_s": 5,
                                 "kill_switch.probe_share": 1.0})
        pool = get_state(client.app.state).pool
        assert pool is not None
        slow_tiers = {"phase3", "phase2"}

        async def slow_database(tier: str, _ctx: TierContext) -> None:
            if tier in slow_tiers:
                await pool.execute("select pg_sleep(0.5)")

        pipeline_of(client).tier_hook = slow_database
        phases = [(await retrieve(client, QUERIES[i % len(QUERIES)])).phase for i in range(6)]
        assert phases == [3] * 6  # slow but answered
        dropped = await retrieve(client)
        assert dropped.phase == 2  # phase 3 taken out of the path, and the path says why
        assert [s.tier for s in dropped.fallback_path] == ["phase3"]
        assert dropped.fallback_path[0].reason.startswith("kill switch: p95 ")
        assert (await admin_flags(client))["kill_switch"]["ceiling"] == 2
        for _ in range(4):
            assert (await retrieve(client)).phase == 2
        assert (await retrieve(client)).phase == 2  # the 6th slow phase-2 sample trips
        body = await admin_flags(client)
        assert [e["trigger"] for e in body["kill_switch"]["events"][:2]] == ["p95_still_breached", "p95"]
        assert (await retrieve(client)).status == "disabled"

        # The database is healthy again; after the cool-down probes restore phase 3.
        pipeline_of(client).tier_hook = None
        await asyncio.sleep(5.05)
        probes = [await retrieve(client, QUERIES[i % len(QUERIES)]) for i in range(6)]
        assert all(r.phase == 3 for r in probes), [r.phase for r in probes]
        body = await admin_flags(client)
        assert body["kill_switch"]["state"] == "closed"
        assert [e["kind"] for e in body["kill_switch"]["events"][:2]] == ["recover", "half_open"]
        assert entry(body, "phase")["source"] == "file"


# -- outage -------------------------------------------------------------------------
async def test_database_outage_never_5xx_and_phase3_returns_after_restart(
    tmp_path: Path, fixture_seeds: Path
) -> None:
    server = EmbeddedPostgres(tmp_path / "pg")
    dsn = await asyncio.to_thread(server.start)
    try:
        async with running(dsn, fixture_seeds, semantic=True) as client:
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
            await put_flags(client, {"phase": 2})  # the store writes again too
            assert (await retrieve(client)).phase == 2
    finally:
        await asyncio.to_thread(server.stop)


async def test_metrics_and_trace_id_in_query_log(db_url: str, fixture_seeds: Path) -> None:
    import logging

    class Keep(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.INFO)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.messages.append(record.getMessage())

    # A handler on the logger itself: Litestar's logging config replaces the root handlers.
    keep, logger = Keep(), logging.getLogger("service.query")
    async with running(db_url, fixture_seeds) as client:
        logger.addHandler(keep)
        level = logger.level
        logger.setLevel(logging.INFO)
        try:
            await retrieve(client, "explain workspace", phase=2)
        finally:
            logger.removeHandler(keep)
            logger.setLevel(level)
        message = next(m for m in keep.messages if '"event": "retrieve"' in m)
        logged = msgspec.json.decode(message)
        assert len(logged["trace_id"]) == 32 and logged["trace_id"] != "0" * 32
        response = await client.get("/metrics")
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
        text = response.text
        assert 'retrieval_latency_ms_count{phase="2",status="answer"' in text
        assert "keyword_queries_total" in text and "keyword_matched_queries_total" in text
        assert 'retrieval_decisions_total{decision="answer"' in text
