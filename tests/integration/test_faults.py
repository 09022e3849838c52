"""Faults: PostgreSQL comes up after the service; SIGTERM with requests in flight.

Already covered elsewhere (not repeated here): `/ready` 503 while the
database is unreachable (test_app.py), a seed cancelled inside its
transaction keeps the previous corpus (test_seeder.py), SIGTERM on an idle
server stops the embedded PostgreSQL and a warm restart works (test_serve.py).
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient
from test_serve import _alive, _postgres_pids, _start, _wait_ready

from service.app import create_app
from service.db.embedded import EmbeddedPostgres, free_port
from service.settings import PROJECT_ROOT, Settings


@pytest.mark.slow
async def test_service_becomes_ready_when_postgres_appears(tmp_path: Path, fixture_seeds: Path) -> None:
    port = free_port()
    settings = Settings(
        database_url=f"postgresql://postgres@127.0.0.1:{port}/postgres", seeds_dir=fixture_seeds,
        migrations_dir=PROJECT_ROOT / "migrations", flags_file=PROJECT_ROOT / "flags.yaml",
        db_connect_timeout=120,
    )
    server = EmbeddedPostgres(tmp_path / "late-pg", port=port)
    async with AsyncTestClient(app=create_app(settings), timeout=30) as client:
        await asyncio.sleep(1.0)  # a few connection attempts fail meanwhile
        response = await client.get("/ready")
        assert response.status_code == 503
        reason = response.json()["reason"]
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
        finally:
            await asyncio.to_thread(server.stop)


@pytest.mark.slow
def test_sigterm_drains_in_flight_requests(tmp_path: Path, fixture_seeds: Path) -> None:
    data_dir, log = tmp_path / "pg", tmp_path / "serve.log"
    port = free_port()
    proc = _start(data_dir, fixture_seeds, port, log)
    try:
        _wait_ready(proc, port, log)
        pids = _postgres_pids(data_dir)

        async def burst() -> list[Any]:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                tasks = [asyncio.create_task(client.post(
                    "/context", json={"query": f"explain workspace and widgets {i}"}))
                    for i in range(24)]
                await asyncio.sleep(0.15)  # requests are in flight now
                proc.send_signal(signal.SIGTERM)
                return await asyncio.gather(*tasks, return_exceptions=True)

        results = asyncio.run(burst())
        assert proc.wait(timeout=60) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    statuses = [r.status_code if isinstance(r, httpx.Response) else repr(r) for r in results]
    assert statuses == [200] * len(results), statuses
    time.sleep(0.2)
    assert _alive(pids) == set(), "PostgreSQL processes left behind"
    assert not (data_dir / "postmaster.pid").exists()
