"""`python -m service serve` as a real process: ready, SIGTERM, no orphaned PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.db.embedded import free_port
from tests.serve_process import postgres_pids, start_serve, stop, wait_gone, wait_ready

READY_TIMEOUT_S = 120


def _start(data_dir: Path, seeds: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    return start_serve(data_dir, port, log, env={"SEEDS_DIR": str(seeds)})


@pytest.mark.slow
def test_serve_ready_sigterm_restart(tmp_path: Path, fixture_seeds: Path) -> None:
    data_dir, log = tmp_path / "pg", tmp_path / "serve.log"
    port = free_port()
    proc = _start(data_dir, fixture_seeds, port, log)
    try:
        ready = wait_ready(proc, port, log, timeout_s=READY_TIMEOUT_S, semantic=False)
        assert ready["documents"] == 3
        pids = postgres_pids(data_dir)
        stop(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_gone(pids)
    assert not (data_dir / "postmaster.pid").exists()

    # Warm restart on the same data directory: data kept, nothing re-inserted.
    proc = _start(data_dir, fixture_seeds, port, log)
    try:
        ready = wait_ready(proc, port, log, timeout_s=READY_TIMEOUT_S, semantic=False)
        assert ready["documents"] == 3
        assert "seed finished" in log.read_text()
        pids = postgres_pids(data_dir)
        stop(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_gone(pids)
    assert "inserted=0, updated=0, unchanged=3" in log.read_text()


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"EMBEDDING_MODEL": "/nonexistent/model-dir"}, "embedding model directory not found: /nonexistent/model-dir"),
        ({"DOC_RETRIEVAL_PHASE": "7"}, "DOC_RETRIEVAL_PHASE"),
    ],
)
def test_bad_configuration_stops_start_up_with_a_clear_message(
    tmp_path: Path, env: dict[str, str], needle: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "service", "serve", "--port", "1", "--data-dir", str(tmp_path / "pg")],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "pg").exists()  # nothing was started
