"""Faults: PostgreSQL comes up after the service; SIGTERM with requests in flight.

Already covered elsewhere (not repeated here): `/ready` 503 while the
database is unreachable (test_app.py), a seed cancelled inside its
transaction keeps the previous corpus (test_seeder.py), SIGTERM on an idle
server stops the embedded PostgreSQL and a warm restart works (test_serve.py).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import yaml
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.db.embedded import EmbeddedPostgres, free_port
from service.settings import PROJECT_ROOT, Settings
from tests.conftest import quiet_flags_file
from tests.serve_process import postgres_pids, start_serve, wait_gone, wait_ready


@pytest.mark.slow
async def test_service_becomes_ready_when_postgres_appears(tmp_path: Path, fixture_seeds: Path) -> None:
    port = free_port()
    settings = Settings(
        database_url=f"postgresql://postgres@127.0.0.1:{port}/postgres", seeds_dir=fixture_seeds,
        migrations_dir=PROJECT_ROOT / "migrations", flags_file=quiet_flags_file(),
        db_connect_timeout=120,
    )
    server = EmbeddedPostgres(tmp_path / "late-pg", port=port)
    async with AsyncTestClient(app=create_app(settings), timeout=30) as client:
        while "attempt" not in (reason := (await client.get("/ready")).json().get("reason", "")):
            await asyncio.sleep(0.05)  # until a connection attempt has failed and been reported
        response = await client.get("/ready")
        assert response.status_code == 503
        assert "database not reachable yet" in reason and "attempt" in reason
        assert (await client.get("/health")).status_code == 200
        try:
            await asyncio.to_thread(server.start)  # PostgreSQL appears on that port
            deadline = time.monotonic() + 120
            while True:
                response = await client.get("/ready")
                if response.status_code == 200:
                    break
                assert time.monotonic() < deadline, response.text
                await asyncio.sleep(0.2)
            assert response.json()["documents"] == 3
            answer = await client.post("/retrieve", json={"query": "explain workspace", "phase": 1})
            assert answer.status_code == 200
            body = answer.json()
            assert (body["status"], body["phase"], body["fallback_path"]) == ("answer", 1, [])
            assert body["results"][0]["doc_slug"] == "concepts/workspace"
        finally:
            await asyncio.to_thread(server.stop)


@pytest.mark.slow
def test_sigterm_drains_in_flight_requests(tmp_path: Path, fixture_seeds: Path) -> None:
    """Requests held inside the pipeline (a tier hook) when SIGTERM arrives all complete."""
    data_dir, log, hold = tmp_path / "pg", tmp_path / "serve.log", tmp_path / "hold"
    hold.mkdir()
    port = free_port()
    # The answers checked below are the seed rules' (the 3-page fixture corpus has no fit of its
    # own); what is under test is that every held request completes.
    flags = yaml.safe_load(quiet_flags_file().read_text(encoding="utf-8"))
    flags["decision"] = {"policy": "seed_rules"}
    flags_file = tmp_path / "flags.yaml"
    flags_file.write_text(yaml.safe_dump(flags), encoding="utf-8")
    proc = start_serve(data_dir, port, log, argv=[str(Path(__file__).with_name("held_serve.py"))],
                       # The drain's deadline is not under test: a busy machine must not reach it.
                       env={"SEEDS_DIR": str(fixture_seeds), "HOLD_DIR": str(hold),
                            "GRACEFUL_SHUTDOWN_SECONDS": "300", "FLAGS_FILE": str(flags_file)})
    try:
        (hold / "release").touch()  # readiness itself needs no holding
        wait_ready(proc, port, log, timeout_s=120, semantic=False)
        (hold / "release").unlink()
        pids = postgres_pids(data_dir)
        n = 24

        async def burst() -> list[Any]:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
                tasks = [asyncio.create_task(client.post(
                    "/context", json={"query": f"explain workspace and widgets {i}"}))
                    for i in range(n)]
                while len(list(hold.glob("held-*"))) < n:  # every request is inside the pipeline
                    assert not any(t.done() for t in tasks), [t.result() for t in tasks if t.done()]
                    await asyncio.sleep(0.02)
                proc.send_signal(signal.SIGTERM)
                while await _accepts_connections(port):  # shutdown has begun: no new connections
                    await asyncio.sleep(0.02)
                assert not any(t.done() for t in tasks)
                (hold / "release").touch()
                return await asyncio.gather(*tasks, return_exceptions=True)

        results = asyncio.run(burst())
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    statuses = [r.status_code if isinstance(r, httpx.Response) else repr(r) for r in results]
    assert statuses == [200] * n, statuses
    for response in results:
        assert isinstance(response, httpx.Response)
        body = response.json()
        assert body["status"] == "answer" and body["phase"] == 3 and body["fallback_path"] == [], body
        cited = {c["doc_slug"] for s in body["sections"] for c in s.get("citations", [])}
        assert "concepts/workspace" in cited, cited
    wait_gone(pids)
    assert not (data_dir / "postmaster.pid").exists()


async def _accepts_connections(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    return True


async def test_seed_process_killed_mid_transaction_keeps_the_previous_corpus(
    db_url: str, fixture_seeds: Path, tmp_path: Path, table_dump: Any
) -> None:
    """SIGKILL a `python -m service seed` after it has written, before it commits."""
    env = {**os.environ, "DATABASE_URL": db_url}
    cli = [sys.executable, "-m", "service", "seed"]
    first = subprocess.run([*cli, "--seeds-dir", str(fixture_seeds)], env=env, capture_output=True, timeout=120)
    assert first.returncode == 0, first.stderr.decode()[-2000:]

    # The next corpus adds a page (an insert) and edits the Workspace page (an update).
    edited = tmp_path / "edited"
    shutil.copytree(fixture_seeds, edited)
    page = edited / "concepts" / "workspace.md"
    page.write_text(page.read_text() + "\nA new closing paragraph.\n")
    (edited / "concepts" / "entry.md").write_text(
        "---\ntitle: Entry\ncategory: concepts\nkeywords: [entry]\n---\n# Entry\n\nAn entry owns workspaces.\n"
    )

    pool = await asyncpg.create_pool(db_url, min_size=1, max_size=2)
    try:
        before = await table_dump(pool)
        # Hold the Workspace row: the seed inserts the new page, then blocks on the update.
        blocker = await pool.acquire()
        transaction = blocker.transaction()
        await transaction.start()
        await blocker.execute("select 1 from docs_knowledge where slug = 'concepts/workspace' for update")
        seeding = subprocess.Popen([*cli, "--seeds-dir", str(edited)], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        backend = None
        for _ in range(600):
            backend = await pool.fetchval(
                "select pid from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()"
            )
            if backend:
                break
            await asyncio.sleep(0.1)
        assert backend, "the seed never reached its update"
        # It has inserted the new page inside its open transaction, and now dies.
        os.kill(seeding.pid, signal.SIGKILL)
        seeding.wait(timeout=30)
        await transaction.rollback()
        await pool.release(blocker)
        for _ in range(100):  # the orphaned backend notices its client is gone and aborts
            if not await pool.fetchval("select count(*) from pg_stat_activity where pid = $1", backend):
                break
            await asyncio.sleep(0.1)
        assert await table_dump(pool) == before

        again = subprocess.run([*cli, "--seeds-dir", str(edited)], env=env, capture_output=True, timeout=120)
        assert again.returncode == 0, again.stderr.decode()[-2000:]
        slugs = {r["slug"]: r["version"] for r in await pool.fetch("select slug, version from docs_knowledge")}
        assert slugs["concepts/entry"] == 1 and slugs["concepts/workspace"] == 2
    finally:
        await pool.close()


def test_sigterm_during_a_cli_command_stops_its_embedded_postgres(tmp_path: Path) -> None:
    """`eval` (like `seed` and `bench`) starts its own PostgreSQL; SIGTERM must not orphan it."""
    from service.db.embedded import PostmasterPid

    data_dir = tmp_path / "pg"
    dataset = Path(__file__).resolve().parents[1] / "fixtures" / "beir_tiny"
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab", "eval", "--dataset", str(dataset), "--phase", "1",
         "--no-baselines", "--no-variants", "--data-dir", str(data_dir)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while PostmasterPid.read(data_dir) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert PostmasterPid.read(data_dir) is not None, "eval never started its database"
        pids = postgres_pids(data_dir)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_gone(pids)
