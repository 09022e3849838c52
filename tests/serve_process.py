"""`python -m service serve` as a real process: how the tests that need one start it, wait for it,
stop it, and check that no PostgreSQL process outlives it (test_serve.py, test_faults.py,
test_readme_promises.py, test_documents_api.py, test_embedded.py, the console's browser tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from service.db.embedded import PostmasterPid
from service.readiness import wait_url_ready_sync
from service.settings import PROJECT_ROOT
from tests.conftest import quiet_flags_file

STOP_TIMEOUT_S = 60
# What the developer's shell may have set that would change what the server under test does.
NOT_INHERITED = ("DATABASE_URL", "ADMIN_TOKEN", "SEEDS_DIR", "DOC_RETRIEVAL_PHASE", "DOC_RETRIEVAL_ENABLED")


def serve_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a service process under test runs in: offline, the kill switch out of
    reach (`quiet_flags_file`); `extra` adds to or overrides that."""
    environ = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", FLAGS_FILE=str(quiet_flags_file()),
                   PYTHONPATH=str(PROJECT_ROOT))
    environ.update(extra or {})
    return environ


def start_serve(
    data_dir: Path, port: int, log: Path, env: Mapping[str, str] | None = None, argv: list[str] | None = None,
) -> subprocess.Popen[bytes]:
    """`python -m service serve` (or `argv`, a wrapper script taking the same arguments) in
    `serve_env(env)`, its output appended to `log`."""
    environ = serve_env(env)
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, *(argv or ["-m", "service"]), "serve", "--port", str(port),
             "--data-dir", str(data_dir)],
            cwd=PROJECT_ROOT, env=environ, stdout=out, stderr=subprocess.STDOUT,
        )


def wait_ready(
    proc: subprocess.Popen[bytes], port: int, log: Path, *, timeout_s: float, semantic: bool = True,
) -> dict[str, Any]:
    """/ready's body once the server is ready (with `semantic`: phase 3's index too); fails with
    the log's tail if the process exits first."""
    def alive() -> None:
        assert proc.poll() is None, f"server exited early:\n{log.read_text()[-3000:]}"

    return wait_url_ready_sync(f"http://127.0.0.1:{port}", timeout_s=timeout_s, semantic=semantic,
                               check_alive=alive)


def stop(proc: subprocess.Popen[bytes], log: Path) -> None:
    """SIGTERM, as an orchestrator stops it: the server must exit cleanly within a minute (else it
    is killed and the test fails)."""
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"no exit {STOP_TIMEOUT_S}s after SIGTERM:\n{log.read_text()[-3000:]}") from None
    assert code == 0, log.read_text()[-3000:]


def postgres_pids(data_dir: Path) -> set[int]:
    """The embedded PostgreSQL's postmaster and its children."""
    info = PostmasterPid.read(data_dir)
    assert info is not None
    master = psutil.Process(info.pid)
    return {info.pid, *(p.pid for p in master.children(recursive=True))}


def alive(pids: set[int]) -> set[int]:
    """Those of `pids` still running (a zombie, exited but not yet reaped, is not)."""
    running = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                running.add(pid)
        except psutil.NoSuchProcess:
            pass
    return running


def wait_gone(pids: set[int], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(pids) == set(), "PostgreSQL processes left behind"
