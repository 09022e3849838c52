"""Keep the database usable: start and restart the embedded PostgreSQL, notice outages.

- Embedded (no `DATABASE_URL`): the service started the server, so it watches
  it. When the postmaster exits unexpectedly (`kill -9`, an out-of-memory
  kill, a crash) it is started again on the same data directory and port
  (PostgreSQL's crash recovery replays the WAL), with backoff; the pool is
  re-opened and the `on_up` hooks run (flag listener, kill switch). A data
  directory that cannot start (corrupt, disk full, port taken) is retried
  with backoff and reported with PostgreSQL's own message; the service keeps
  serving phases 1-2 from memory and never exits for it.
- External (`DATABASE_URL`): someone else's server. A probe query every
  `interval_s` notices it going away and coming back (retrying with backoff
  while it is away); on its return the pool is re-opened and the hooks run.

Everything a user or operator sees is in `status()` (`/ready`) and the
restart counter (`/metrics`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import asyncpg

from service.db.embedded import EmbeddedPostgres, EmbeddedPostgresError
from service.db.errors import DatabaseTimeout, DatabaseUnreachable, database_cause
from service.db.pool import create_pool, describe_error
from service.domain.types import Base

log = logging.getLogger(__name__)

DbState = Literal["starting", "up", "down", "restarting"]
WATCH_INTERVAL_S = 0.5
PROBE_BACKOFF_MAX_S = 2.0
RESTART_BACKOFF_START_S = 0.5
RESTART_BACKOFF_MAX_S = 30.0

PoolHook = Callable[[], Awaitable[None]]


class RestartRecord(Base, frozen=True):
    at: float
    """Wall time (epoch seconds) the server answered again."""
    reason: str
    attempts: int
    downtime_s: float


class DatabaseStatus(Base, frozen=True):
    """What `/ready` shows about the database."""

    mode: Literal["embedded", "external", "attached"]
    state: DbState
    cause: str | None = None
    """Why it is not `up` (PostgreSQL's own message when a start failed)."""
    restarts: int = 0
    last_restart: RestartRecord | None = None


class DatabaseSupervisor:
    """Start, watch and restart; `pool` is the service's current asyncpg pool."""

    def __init__(
        self,
        *,
        embedded: EmbeddedPostgres | None,
        dsn: str | None,
        probe_sql: str = "select 1",
        timeout_ms: Callable[[], int] = lambda: 2000,
        interval_s: float = WATCH_INTERVAL_S,
        on_restart: Callable[[], None] | None = None,
    ) -> None:
        self.embedded = embedded
        self.dsn = dsn
        self.probe_sql = probe_sql
        self.timeout_ms = timeout_ms
        self.interval_s = interval_s
        self.on_restart = on_restart
        """Counts a restart (the /metrics counter)."""
        self.pool: asyncpg.Pool[Any] | None = None
        self.state: DbState = "starting"
        self.cause: str | None = None
        self.restarts = 0
        self.last_restart: RestartRecord | None = None
        self.on_up: list[PoolHook] = []
        """After the database answers again (not at first start): re-subscribe, resync."""
        self.on_answer: list[Callable[[], None]] = []
        """After every successful probe (the kill switch's 'database answers')."""
        self.pool_changed: Callable[[asyncpg.Pool[Any] | None], None] | None = None
        self._down_since: float | None = None
        self._thread: asyncio.Future[str] | None = None
        self._probe_now = asyncio.Event()

    # -- reporting ----------------------------------------------------------
    @property
    def mode(self) -> Literal["embedded", "external", "attached"]:
        if self.embedded is None:
            return "external"
        if self.embedded.owner or self.dsn is None:  # ours, or not started yet
            return "embedded"
        return "attached"  # another process's server: reconnect only, never restart

    def status(self) -> DatabaseStatus:
        return DatabaseStatus(mode=self.mode, state=self.state, cause=self.cause,
                              restarts=self.restarts, last_restart=self.last_restart)

    def not_ready_reason(self) -> str | None:
        if self.state == "up" or self.cause is None:  # start-up reports its own progress
            return None
        return f"database {self.state}: {self.cause}"

    # -- start ----------------------------------------------------------------
    async def start_server(self) -> str:
        """The DSN; starts the embedded server first, retrying with backoff until it runs."""
        if self.embedded is None:
            assert self.dsn is not None
            return self.dsn
        embedded = self.embedded
        delay, attempt = RESTART_BACKOFF_START_S, 0
        while True:
            attempt += 1
            try:
                self.dsn = await self._in_thread(embedded.start)
                self.cause = None
                return self.dsn
            except EmbeddedPostgresError as err:
                self._start_failed("embedded PostgreSQL cannot start", attempt, err, delay)
            except Exception as err:  # e.g. a data directory we may not write: report, retry
                self._start_failed("embedded PostgreSQL cannot start", attempt,
                                   EmbeddedPostgresError(describe_error(err)), delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESTART_BACKOFF_MAX_S)

    def attach_pool(self, pool: asyncpg.Pool[Any]) -> None:
        """Start-up opened the pool: the database is up, watching starts."""
        self.pool = pool
        self.state, self.cause = "up", None

    # -- watch ----------------------------------------------------------------
    def recheck(self) -> None:
        """Probe at once instead of after the back-off: called when `timeouts.db_ms` changes,
        so an operator who mends a too-short timeout sees the database up again right away."""
        self._probe_now.set()

    async def _pause(self, delay: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self._probe_now.wait()
        self._probe_now.clear()

    async def watch(self) -> None:
        """Run until cancelled: restart a dead embedded server, probe otherwise."""
        delay = self.interval_s
        while True:
            await self._pause(delay)
            try:
                embedded = self.embedded
                if embedded is not None and embedded.owner and not embedded.running():
                    await self._restart_embedded()
                    delay = self.interval_s
                    continue
                ok = await self.probe()
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug here must not end supervision for good
                log.exception("database supervision step failed; continuing")
                ok = False
            delay = self.interval_s if ok else min(max(delay, 0.2) * 2, PROBE_BACKOFF_MAX_S)

    async def probe(self) -> bool:
        """One probe query within `timeouts.db_ms`; runs the transitions."""
        limit = self.timeout_ms()
        try:
            pool = self.pool
            if pool is None:
                raise DatabaseUnreachable("no connection pool")
            try:
                async with asyncio.timeout(limit / 1000):
                    await pool.fetchval(self.probe_sql)
            except TimeoutError as err:
                raise DatabaseTimeout(limit) from err
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self._went_down(database_cause(err) or describe_error(err))
            return False
        if self.state != "up":
            # Connections were lost (refused, reset, shut down): open fresh ones. After a
            # mere timeout (a lock, a slow server) the pool's connections are still good.
            await self._came_back(reopen=(self.cause or "").startswith("database unreachable"))
        for hook in self.on_answer:
            hook()
        return True

    def _went_down(self, cause: str) -> None:
        if self.state == "up":
            log.warning("database unavailable: %s", cause)
            self._down_since = time.monotonic()
        self.state, self.cause = "down", cause

    async def _came_back(self, *, reopen: bool) -> None:
        if reopen:
            try:
                await self._reopen_pool()
            except Exception as err:  # flapped again: stay down, the next probe retries
                self._went_down(database_cause(err) or describe_error(err))
                return
        downtime = time.monotonic() - (self._down_since or time.monotonic())
        self.state, self.cause, self._down_since = "up", None, None
        log.info("database answers again after %.1f s", downtime)
        for hook in self.on_up:
            try:
                await hook()
            except Exception:  # a hook must not stop the supervision
                log.exception("database recovery hook failed")

    async def _reopen_pool(self) -> None:
        """A fresh pool (every old connection is dead or suspect), then close the old one."""
        assert self.dsn is not None
        pool = await asyncio.wait_for(create_pool(self.dsn), self.timeout_ms() / 1000 + 5)
        old, self.pool = self.pool, pool
        if self.pool_changed is not None:
            self.pool_changed(pool)
        if old is not None:
            old.terminate()

    async def _restart_embedded(self) -> None:
        embedded = self.embedded
        assert embedded is not None
        reason = "embedded PostgreSQL exited unexpectedly"
        log.error("%s (pid %s); restarting it on %s", reason, embedded.postmaster_pid(),
                  embedded.data_dir)
        self._went_down(f"database unreachable: {reason}, restarting")
        self.state = "restarting"
        started = time.monotonic()
        old, self.pool = self.pool, None
        if self.pool_changed is not None:
            self.pool_changed(None)
        if old is not None:
            old.terminate()
        delay, attempt = RESTART_BACKOFF_START_S, 0
        while True:
            attempt += 1
            try:
                await self._in_thread(embedded.restart)
                break
            except EmbeddedPostgresError as err:
                self._start_failed("embedded PostgreSQL did not restart", attempt, err, delay)
            except Exception as err:
                self._start_failed("embedded PostgreSQL did not restart", attempt,
                                   EmbeddedPostgresError(describe_error(err)), delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESTART_BACKOFF_MAX_S)
        while True:  # the server runs; the pool may need a moment (recovery still replaying)
            try:
                await self._came_back_after_restart()
                break
            except Exception as err:
                self.cause = database_cause(err) or describe_error(err)
                await asyncio.sleep(RESTART_BACKOFF_START_S)
        self.restarts += 1
        self.last_restart = RestartRecord(
            at=time.time(), reason=reason, attempts=attempt,
            downtime_s=round(time.monotonic() - started, 3),
        )
        if self.on_restart is not None:
            self.on_restart()
        log.warning("embedded PostgreSQL restarted (restart %d, %d attempt(s), %.1f s down)",
                    self.restarts, attempt, self.last_restart.downtime_s)

    async def _came_back_after_restart(self) -> None:
        await self._reopen_pool()
        await self._came_back(reopen=False)

    def _start_failed(self, what: str, attempt: int, err: EmbeddedPostgresError, delay: float) -> None:
        self.state = "down" if self.state != "restarting" else "restarting"
        self.cause = f"{what} (attempt {attempt}, next in {delay:g} s): {err.server_message}"
        log.error("%s (attempt %d, retrying in %g s): %s", what, attempt, delay, err.server_message)

    # -- shutdown ---------------------------------------------------------------
    async def _in_thread(self, work: Callable[[], str]) -> str:
        """Blocking pg_ctl work in a thread; remembered so shutdown can wait for it."""
        future = asyncio.get_running_loop().run_in_executor(None, work)
        self._thread = future
        try:
            return await asyncio.shield(future)
        finally:
            if future.done():
                self._thread = None

    async def wait_idle(self, timeout: float = 90.0) -> None:
        """After cancelling `watch`: let a start/restart in a thread finish before stopping."""
        future = self._thread
        if future is not None and not future.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(future), timeout)
