"""Promises the documentation makes about start-up and the CLI, each checked on a real process.

- the glossary answers `/retrieve` over HTTP while the database never came up
  (docs/architecture.md, "Tier-1 cache");
- `DB_CONNECT_TIMEOUT` running out makes `serve` exit 1 with the reason, and a server
  without the `vector` extension stops start-up with a clear message
  (docs/configuration.md, "Environment");
- `seed` exits 1 naming the bad file; `replay` exits 1 when a case fails
  (docs/index.md, "Command line: the service").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from service.db.embedded import free_port
from service.settings import PROJECT_ROOT
from tests.serve_process import serve_env, start_serve, stop


def _nowhere() -> str:
    """A PostgreSQL URL on a loopback port nothing listens on."""
    return f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"


def _wait_listening(port: int, alive: Any, timeout_s: float = 180) -> None:
    """Until /health answers (liveness; /ready stays 503 in these tests)."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        alive()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "serve never listened"
        time.sleep(0.1)


@pytest.mark.slow
def test_glossary_answers_over_http_while_the_database_never_came_up(tmp_path: Path) -> None:
    log, port = tmp_path / "serve.log", free_port()
    # The real seeds directory: the glossary is seeds/core_concepts.yaml.
    proc = start_serve(tmp_path / "unused", port, log, env={
        "SEEDS_DIR": str(PROJECT_ROOT / "seeds"), "DATABASE_URL": _nowhere(), "DB_CONNECT_TIMEOUT": "600"})
    try:
        def alive() -> None:
            assert proc.poll() is None, log.read_text()[-3000:]

        _wait_listening(port, alive)
        ready = httpx.get(f"http://127.0.0.1:{port}/ready", timeout=10)
        assert ready.status_code == 503 and "database not reachable yet" in ready.json()["reason"]
        response = httpx.post(f"http://127.0.0.1:{port}/retrieve", json={"query": "what is a workspace?"}, timeout=30)
        assert response.status_code == 200, response.text
        body = response.json()
        assert (body["status"], body["phase"]) == ("answer", 0)
        assert body["results"][0]["source"] == "cache" and body["results"][0]["doc_slug"] == "concepts/workspace"
        assert [step["tier"] for step in body["fallback_path"]] == ["phase3", "phase2", "phase1"]
        stop(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_exits_1_when_db_connect_timeout_runs_out(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "service", "serve", "--port", str(free_port())],
        env=serve_env({"DATABASE_URL": _nowhere(), "DB_CONNECT_TIMEOUT": "1"}), cwd=PROJECT_ROOT,
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "database unreachable after" in result.stderr, result.stderr[-3000:]


async def test_missing_vector_extension_stops_start_up_with_a_clear_message(db_url: str, tmp_path: Path) -> None:
    """A database where `vector` is not on offer: its own `pg_available_extensions` hides it,
    exactly what the service sees on a server without pgvector installed."""
    conn = await asyncpg.connect(db_url)
    try:
        await conn.execute("drop extension if exists vector")
        await conn.execute("create schema no_pgvector")
        await conn.execute("create view no_pgvector.pg_available_extensions as"
                           " select * from pg_catalog.pg_available_extensions where name <> 'vector'")
        database = await conn.fetchval("select current_database()")
        await conn.execute(f'alter database "{database}" set search_path = no_pgvector, pg_catalog, public')
    finally:
        await conn.close()
    result = subprocess.run(
        [sys.executable, "-m", "service", "serve", "--port", str(free_port())],
        env=serve_env({"DATABASE_URL": db_url, "DB_CONNECT_TIMEOUT": "30"}), cwd=PROJECT_ROOT,
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "does not offer the 'vector' extension" in result.stderr, result.stderr[-3000:]
    assert "Traceback" not in result.stderr


def test_seed_exits_1_naming_the_bad_file(db_url: str, fixture_seeds: Path) -> None:
    bad = fixture_seeds / "concepts" / "broken.md"
    bad.write_text("---\ntitle: [unclosed\n---\nbody\n")
    result = subprocess.run(
        [sys.executable, "-m", "service", "seed", "--seeds-dir", str(fixture_seeds)],
        env=serve_env({"DATABASE_URL": db_url}), cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "broken.md" in result.stderr


def test_replay_exits_1_when_a_case_fails(db_url: str, fixture_seeds: Path, tmp_path: Path) -> None:
    golden = tmp_path / "golden.yaml"
    golden.write_text(
        "cases:\n"
        "  - {id: right, query: explain workspace, phases: [1], expect: {decision: answer, top: concepts/workspace}}\n"
        "  - {id: wrong, query: explain workspace, phases: [1], expect: {decision: answer, top: widgets/quick-links}}\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "service", "replay", str(golden), "--phase", "1"],
        env=serve_env({"DATABASE_URL": db_url, "SEEDS_DIR": str(fixture_seeds)}), cwd=PROJECT_ROOT,
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 1, (result.stdout + result.stderr)[-3000:]
    lines: Any = result.stdout.splitlines()
    assert any(line.startswith("PASS [phase 1] right") for line in lines), result.stdout
    assert any(line.startswith("FAIL [phase 1] wrong") for line in lines), result.stdout
    assert "1 passed, 1 failed" in result.stdout
