"""The embedded PostgreSQL: restart keeps data, stale pid files, orphaned servers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from service.db.embedded import EmbeddedPostgres, PostmasterPid
from service.settings import PROJECT_ROOT
from tests.serve_process import alive, wait_gone


def _query(dsn: str, sql: str) -> object:
    async def run() -> object:
        conn = await asyncpg.connect(dsn)
        try:
            return await conn.fetchval(sql)
        finally:
            await conn.close()

    return asyncio.run(run())


def test_data_survives_restart_and_stop_is_clean(tmp_path: Path) -> None:
    server = EmbeddedPostgres(tmp_path / "pg")
    dsn = server.start()
    _query(dsn, "create table kept as select 42 as x")
    pid = server.postmaster_pid()
    assert pid is not None
    server.stop()
    server.stop()  # idempotent
    assert not alive({pid})
    again = EmbeddedPostgres(tmp_path / "pg")
    try:
        assert _query(again.start(), "select x from kept") == 42
    finally:
        again.stop()


def test_stale_postmaster_pid_is_ignored(tmp_path: Path) -> None:
    server = EmbeddedPostgres(tmp_path / "pg")
    server.start()
    pidfile = tmp_path / "pg" / "postmaster.pid"
    lines = pidfile.read_text().splitlines()
    server.stop()
    # What a SIGKILLed server leaves behind: the pid file of a process that is gone.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    pidfile.write_text("\n".join([str(dead.pid), *lines[1:]]) + "\n")
    again = EmbeddedPostgres(tmp_path / "pg")
    try:
        assert _query(again.start(), "select 1") == 1
    finally:
        again.stop()


def test_orphan_from_killed_process_is_stopped_and_replaced(tmp_path: Path) -> None:
    data = tmp_path / "pg"
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path;"
         "from service.db.embedded import EmbeddedPostgres;"
         "EmbeddedPostgres(Path(sys.argv[1])).start(); print('up', flush=True); time.sleep(600)",
         str(data)],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "up"
    orphan = PostmasterPid.read(data)
    assert orphan is not None
    os.kill(child.pid, signal.SIGKILL)  # no cleanup runs: the server is orphaned
    child.wait()
    child.stdout.close()
    assert alive({orphan.pid})
    server = EmbeddedPostgres(data)
    try:
        assert _query(server.start(), "select 1") == 1
        assert not alive({orphan.pid})
        assert server.postmaster_pid() != orphan.pid
    finally:
        server.stop()


def test_second_process_attaches_without_stopping(tmp_path: Path) -> None:
    owner = EmbeddedPostgres(tmp_path / "pg")
    owner.start()
    try:
        guest = EmbeddedPostgres(tmp_path / "pg")
        dsn = guest.start()
        assert not guest.owner and _query(dsn, "select 1") == 1
        guest.stop()
        pid = owner.postmaster_pid()
        assert pid is not None and alive({pid})
    finally:
        owner.stop()
    # The owner's stop really stops the server it started (the guest's did not).
    wait_gone({pid})  # the owner's stop left no postmaster running
    assert PostmasterPid.read(tmp_path / "pg") is None
    with pytest.raises(OSError):
        _query(dsn, "select 1")
