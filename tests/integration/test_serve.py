"""`python -m service serve` as a real process: ready, SIGTERM, no orphaned PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from service.db.embedded import PostmasterPid, free_port
from service.readiness import wait_url_ready_sync
from service.settings import PROJECT_ROOT
from tests.conftest import quiet_flags_file

READY_TIMEOUT_S = 120


def _start(
    data_dir: Path, seeds: Path, port: int, log: Path,
    argv: list[str] | None = None, env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """`python -m service serve` (or `argv`, a wrapper script taking the same arguments)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ADMIN_TOKEN")}
    environ.update(SEEDS_DIR=str(seeds), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                   FLAGS_FILE=str(quiet_flags_file()), PYTHONPATH=str(PROJECT_ROOT))
    environ.update(env or {})  # the caller's own (e.g. FLAGS_FILE) win
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, *(argv or ["-m", "service"]), "serve", "--port", str(port),
             "--data-dir", str(data_dir)],
            cwd=PROJECT_ROOT, env=environ, stdout=out, stderr=subprocess.STDOUT,
        )


def _wait_ready(proc: subprocess.Popen[bytes], port: int, log: Path) -> dict[str, object]:
    def alive() -> None:
        assert proc.poll() is None, f"server exited early:\n{log.read_text()[-3000:]}"

    return wait_url_ready_sync(f"http://127.0.0.1:{port}", timeout_s=READY_TIMEOUT_S, semantic=False,
                               check_alive=alive)


def _postgres_pids(data_dir: Path) -> set[int]:
    info = PostmasterPid.read(data_dir)
    assert info is not None
    master = psutil.Process(info.pid)
    return {info.pid, *(p.pid for p in master.children(recursive=True))}


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _wait_gone(pids: set[int], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(pids) == set(), "PostgreSQL processes left behind"


def _stop(proc: subprocess.Popen[bytes], log: Path) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert code == 0, log.read_text()[-3000:]


@pytest.mark.slow
def test_serve_ready_sigterm_restart(tmp_path: Path, fixture_seeds: Path) -> None:
    data_dir, log = tmp_path / "pg", tmp_path / "serve.log"
    port = free_port()
    proc = _start(data_dir, fixture_seeds, port, log)
    try:
        ready = _wait_ready(proc, port, log)
        assert ready["documents"] == 3
        pids = _postgres_pids(data_dir)
        _stop(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
    _wait_gone(pids)
    assert not (data_dir / "postmaster.pid").exists()

    # Warm restart on the same data directory: data kept, nothing re-inserted.
    proc = _start(data_dir, fixture_seeds, port, log)
    try:
        ready = _wait_ready(proc, port, log)
        assert ready["documents"] == 3
        assert "seed finished" in log.read_text()
        pids = _postgres_pids(data_dir)
        _stop(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
    _wait_gone(pids)
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
