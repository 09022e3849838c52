"""Long admin work as jobs in PostgreSQL (migration 017): a re-index, a re-seed, a decision fit.

`JobStore.start` stores the job and answers at once; the work runs in the background on this
replica. Any replica reads the job's state, progress and result (`get`, `recent`), and a
restart loses none.

One job of a kind per corpus at a time, whichever replica starts it: the runner holds a
session advisory lock, on a connection of its own, from before its row exists until after its
end is written (and a partial unique index allows one queued or running row per kind and
corpus). The lock is also how a replica tells a running job from an orphan: a process that
dies loses its connection and so the lock, and a queued or running row whose lock nobody
holds is marked failed (interrupted) at start-up, when it is read, and before the next job of
its kind starts. A runner whose connection is lost (the database restarted) stops its work
the same way, so no job runs without its lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import asyncpg
import msgspec

from service.db.errors import DatabaseUnreachable

log = logging.getLogger(__name__)

JobKind = Literal["reindex", "seed", "decision_fit"]
JobState = Literal["queued", "running", "done", "failed"]
ENDED = ("done", "failed")

# Arbitrary but fixed: the first key of a job's advisory lock (the second: kind/corpus).
LOCK_NAMESPACE = 0x6A6F6273
INTERRUPTED = "interrupted: the process running it stopped, or lost the database, before it ended"
STOPPED = "stopped: the service shut down before it ended"
CONNECT_TIMEOUT_S = 10.0
PROGRESS_EVERY_S = 1.0
"""How often a running job's progress is written (when it changed)."""
WAIT_POLL_S = 0.5
"""How often `wait` re-reads a job that runs on another replica."""
STOP_TIMEOUT_S = 10.0
RECENT = 20

Work = Callable[[], Awaitable[dict[str, Any]]]
"""The job itself: its result (JSON-able), or JobFailed."""
Snapshot = Callable[[], dict[str, Any]]
"""The job's progress now, as the work reports it (`{"step": ..., counts}`)."""

_COLUMNS = ("id, kind, corpus, state, actor, params::text as params, progress::text as progress,"
            " result::text as result, error, created_at, started_at, finished_at")
_LOCK_KEY = "hashtext(j.kind || '/' || j.corpus)"
# A queued or running job whose runner's lock nobody holds: its process is gone.
_ORPHANS_SQL = f"""
    update jobs j set state = 'failed', error = $1, finished_at = now()
    where j.state in ('queued', 'running') and ($2::text is null or j.id = $2)
      and not exists (
        select 1 from pg_locks l
        where l.locktype = 'advisory' and l.granted and l.objsubid = 2
          and l.database = (select oid from pg_database where datname = current_database())
          and l.classid = {LOCK_NAMESPACE}::int4::oid and l.objid = {_LOCK_KEY}::oid)
"""


class Job(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    kind: JobKind
    corpus: str
    state: JobState
    actor: str
    params: dict[str, Any]
    progress: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None
    created_at: str
    started_at: str | None
    finished_at: str | None

    @property
    def ended(self) -> bool:
        return self.state in ENDED


class JobFailed(Exception):
    """Raised by a job's work: the job fails with this message (and `result`, e.g. what was rejected)."""

    def __init__(self, message: str, result: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.result = result


class JobRunning(Exception):
    """A job of this kind is queued or running for the corpus, on this replica or another."""

    def __init__(self, kind: JobKind, job: Job | None) -> None:
        super().__init__(f"a {kind} job is already running" + (f" (job {job.id})" if job else ""))
        self.kind = kind
        self.job = job


@dataclass
class Steps:
    """The progress of a job whose work reports one line at a time."""

    step: str = "starting"

    def say(self, step: str) -> None:
        self.step = step

    def snapshot(self) -> dict[str, Any]:
        return {"step": self.step}


def _iso(value: Any) -> str | None:
    return None if value is None else str(value.isoformat())


def _job(row: asyncpg.Record) -> Job:
    return Job(
        id=row["id"], kind=row["kind"], corpus=row["corpus"], state=row["state"], actor=row["actor"],
        params=json.loads(row["params"]), progress=json.loads(row["progress"]),
        result=None if row["result"] is None else json.loads(row["result"]), error=row["error"],
        created_at=str(row["created_at"].isoformat()), started_at=_iso(row["started_at"]),
        finished_at=_iso(row["finished_at"]),
    )


@dataclass
class _Run:
    """One job running here: its lock's connection and what the runner's tasks share."""

    job: Job
    conn: asyncpg.Connection[Any]
    snapshot: Snapshot
    task: asyncio.Task[None] | None = None
    writing: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One statement at a time on the lock's connection (progress and the end)."""
    ending: bool = False
    lost: bool = False
    finished: asyncio.Event = field(default_factory=asyncio.Event)


class JobStore:
    """The jobs of one corpus: starts them here, reads them from the table (any replica's)."""

    def __init__(self, corpus: str) -> None:
        self.corpus = corpus
        self.dsn: str | None = None
        self.runs: dict[str, _Run] = {}

    async def start_store(self, dsn: str) -> None:
        """Once the pool is up: remember where the database is, and fail what died with a process."""
        self.dsn = dsn
        try:
            conn = await asyncpg.connect(dsn, timeout=CONNECT_TIMEOUT_S)
            try:
                status = await conn.execute(_ORPHANS_SQL, INTERRUPTED, None)
            finally:
                await conn.close()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as err:
            log.warning("jobs: could not check for interrupted jobs at start-up: %s", err)
            return
        if status != "UPDATE 0":
            log.warning("jobs: %s interrupted job(s) marked failed", status.split()[-1])

    # -- starting -------------------------------------------------------------------------
    async def start(
        self, kind: JobKind, actor: str, work: Work, progress: Snapshot, params: dict[str, Any] | None = None,
    ) -> Job:
        """Store the job and run `work` in the background; JobRunning if one of its kind runs."""
        if self.dsn is None:
            raise DatabaseUnreachable("the job store has no database yet")
        conn = await asyncpg.connect(self.dsn, timeout=CONNECT_TIMEOUT_S)
        try:
            locked = await conn.fetchval("select pg_try_advisory_lock($1, hashtext($2))",
                                         LOCK_NAMESPACE, f"{kind}/{self.corpus}")
            if not locked:
                row = await conn.fetchrow(
                    f"select {_COLUMNS} from jobs where kind = $1 and corpus = $2 and state in ('queued', 'running')",
                    kind, self.corpus)
                raise JobRunning(kind, None if row is None else _job(row))
            # Holding the lock proves no runner of this kind is alive: a row still active is an orphan.
            await conn.execute(
                "update jobs set state = 'failed', error = $1, finished_at = now()"
                " where kind = $2 and corpus = $3 and state in ('queued', 'running')", INTERRUPTED, kind, self.corpus)
            job_id = uuid.uuid4().hex[:16]
            await conn.execute("insert into jobs (id, kind, corpus, actor, params, progress) values"
                               " ($1, $2, $3, $4, $5::jsonb, $6::jsonb)",
                               job_id, kind, self.corpus, actor, json.dumps(params or {}), json.dumps(progress()))
            row = await conn.fetchrow(f"update jobs set state = 'running', started_at = now() where id = $1"
                                      f" returning {_COLUMNS}", job_id)
        except BaseException:
            await conn.close()  # the lock goes with the session
            raise
        assert row is not None
        run = _Run(job=_job(row), conn=conn, snapshot=progress)
        self.runs[run.job.id] = run
        run.task = asyncio.create_task(self._run(run, work), name=f"job-{kind}-{run.job.id}")
        return run.job

    # -- running --------------------------------------------------------------------------
    async def _run(self, run: _Run, work: Work) -> None:
        me = asyncio.current_task()

        def lost(_conn: object) -> None:
            if not run.ending and me is not None:
                run.lost = True
                me.cancel()

        run.conn.add_termination_listener(lost)
        stop_progress = asyncio.Event()
        reporter = asyncio.create_task(self._report(run, stop_progress), name=f"job-progress-{run.job.id}")
        result: dict[str, Any] | None = None
        error: str | None = None
        try:
            result = await work()
        except asyncio.CancelledError:
            error = INTERRUPTED if run.lost else STOPPED
        except JobFailed as err:
            error, result = str(err), err.result
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as err:
            error = f"the database failed during the job ({type(err).__name__}: {err})"
        except Exception as err:  # a bug: logged whole, named to the operator
            log.exception("job %s (%s) failed", run.job.id, run.job.kind)
            error = f"{type(err).__name__}: {err}"
        finally:
            run.ending = True
            stop_progress.set()
            await asyncio.wait({reporter})
            await self._finish(run, result, error)
            self.runs.pop(run.job.id, None)
            run.finished.set()

    async def _report(self, run: _Run, stop: asyncio.Event) -> None:
        """Write the job's progress when it changed, every PROGRESS_EVERY_S, until `stop`."""
        last = run.job.progress
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), PROGRESS_EVERY_S)
            now = run.snapshot()
            if now == last or run.lost:
                continue
            try:
                async with run.writing:
                    await run.conn.execute("update jobs set progress = $2::jsonb where id = $1",
                                           run.job.id, json.dumps(now))
                last = now
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as err:
                log.warning("job %s: progress not written: %s", run.job.id, err)

    async def _finish(self, run: _Run, result: dict[str, Any] | None, error: str | None) -> None:
        """Write the end, then let the lock go (closing its connection)."""
        args = (run.job.id, "failed" if error is not None else "done",
                None if result is None else json.dumps(result), error, json.dumps(run.snapshot()))
        sql = ("update jobs set state = $2, result = $3::jsonb, error = $4, progress = $5::jsonb, finished_at = now()"
               " where id = $1 and state in ('queued', 'running')")
        try:
            if run.lost:
                raise asyncpg.InterfaceError("the job's connection was lost")
            async with run.writing:
                await run.conn.execute(sql, *args)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as err:
            # The lock is gone with its connection: say so on another one, if the database answers.
            log.warning("job %s: end not written on its own connection (%s)", run.job.id, err)
            with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                assert self.dsn is not None
                conn = await asyncpg.connect(self.dsn, timeout=CONNECT_TIMEOUT_S)
                try:
                    await conn.execute(sql, *args)
                finally:
                    await conn.close()
        finally:
            with contextlib.suppress(Exception):
                await run.conn.close()

    async def stop(self) -> None:
        """At shutdown: stop the jobs running here (each is written failed, `STOPPED`)."""
        tasks = [run.task for run in self.runs.values() if run.task is not None and not run.task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=STOP_TIMEOUT_S)
            if pending:
                log.error("jobs: %d did not stop within %.0f s", len(pending), STOP_TIMEOUT_S)
        for run in list(self.runs.values()):  # cancelled before its runner began: nothing wrote its end
            if run.task is not None and run.task.done():
                run.ending = True
                await self._finish(run, None, STOPPED)
                self.runs.pop(run.job.id, None)
                run.finished.set()

    # -- reading (any replica's jobs) -----------------------------------------------------------
    async def get(self, pool: asyncpg.Pool[Any], job_id: str) -> Job | None:
        async with pool.acquire() as conn:
            row = await conn.fetchrow(f"select {_COLUMNS} from jobs where id = $1", job_id)
            if row is not None and row["state"] not in ENDED:
                await conn.execute(_ORPHANS_SQL, INTERRUPTED, job_id)
                row = await conn.fetchrow(f"select {_COLUMNS} from jobs where id = $1", job_id)
        return None if row is None else _job(row)

    async def recent(self, pool: asyncpg.Pool[Any], kind: JobKind | None = None, limit: int = RECENT) -> list[Job]:
        """This corpus's latest jobs, newest first (orphans marked failed first)."""
        async with pool.acquire() as conn:
            await conn.execute(_ORPHANS_SQL, INTERRUPTED, None)
            rows = await conn.fetch(
                f"select {_COLUMNS} from jobs where corpus = $1 and ($2::text is null or kind = $2)"
                " order by created_at desc, id limit $3", self.corpus, kind, limit)
        return [_job(r) for r in rows]

    async def wait(self, pool: asyncpg.Pool[Any], job: Job, timeout_s: float) -> Job:
        """The job once it ended, or as it is after `timeout_s` (a long poll: no client needs to sleep)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not job.ended and (left := deadline - loop.time()) > 0:
            run = self.runs.get(job.id)
            if run is not None:  # running here: its end is known the moment it is written
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(run.finished.wait(), left)
            else:
                await asyncio.sleep(min(WAIT_POLL_S, left))
            job = await self.get(pool, job.id) or job
        return job
