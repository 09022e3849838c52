"""Long admin work as jobs (admin token; `service/job_store.py`, migration 017).

`POST /admin/reindex`, `POST /admin/seed` and `POST /admin/decision-fits` answer 202 at once
with `{"job": {...}}` (and `Location:` its status URL); the work runs in the background on the
replica that took the request. A second start of the same kind for the corpus while one is
queued or running, on any replica, answers 409 naming that job.

- `GET /admin/jobs/{job_id}[?wait=S]`: a job, from any replica: `state` (queued, running,
  done, failed), `step` and `progress`, `result` once done, `error` once failed; `wait`
  (≤ 120 s) answers as soon as the job ends (a long poll);
- `GET /admin/jobs[?kind=K]`: the corpus's recent jobs, newest first.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get
from litestar.datastructures import State
from litestar.exceptions import ClientException, NotFoundException
from litestar.params import FromPath, QueryParameter

from service.api.auth import admin_guard
from service.api.errors import client_errors
from service.api.unavailable import DatabaseUnavailableError, database_write, require_pool
from service.domain.types import Base
from service.feedback.log_writer import DB_ERRORS
from service.job_store import Job, JobKind, JobRunning, JobState, Snapshot, Work
from service.state import get_state

MAX_WAIT_S = 120.0
MAX_JOB_ID = 64
_NAMES = {"reindex": "re-index", "seed": "seed", "decision_fit": "decision fit"}


class JobOut(Base, frozen=True):
    id: str
    kind: JobKind
    corpus: str
    state: JobState
    """queued → running → done | failed; a job whose process died is failed (interrupted)."""
    actor: str
    step: str | None
    """What it is doing now (its last step once ended)."""
    progress: dict[str, Any]
    params: dict[str, Any]
    result: dict[str, Any] | None
    """Once done: the report (a re-index's or seed's counts, a fit's figures)."""
    error: str | None
    """Once failed: why."""
    created_at: str
    started_at: str | None
    finished_at: str | None
    status_url: str
    """Where to read it (`?wait=S` to wait for its end)."""


class JobAnswer(Base, frozen=True):
    job: JobOut


class JobList(Base, frozen=True):
    jobs: list[JobOut]


def status_url(job_id: str) -> str:
    return f"/admin/jobs/{job_id}"


def job_out(job: Job) -> JobOut:
    step = job.progress.get("step")
    return JobOut(
        id=job.id, kind=job.kind, corpus=job.corpus, state=job.state, actor=job.actor,
        step=step if isinstance(step, str) else None, progress=job.progress, params=job.params,
        result=job.result, error=job.error, created_at=job.created_at, started_at=job.started_at,
        finished_at=job.finished_at, status_url=status_url(job.id),
    )


def actor_of(request: Request[Any, Any, Any]) -> str:
    return f"admin@{request.client.host if request.client else 'unknown'}"


async def start_job(
    state: State, kind: JobKind, request: Request[Any, Any, Any], work: Work, progress: Snapshot,
    params: dict[str, Any] | None = None,
) -> Response[JobAnswer]:
    """202 with the job now, its work in the background; 409 naming the job of its kind running."""
    st = get_state(state)
    name = _NAMES[kind]
    require_pool(st, f"a {name}")
    try:
        async with database_write(f"a {name}"):
            job = await st.jobs.start(kind, actor_of(request), work, progress, params)
    except JobRunning as err:
        running = err.job
        where = f" (job {running.id}: GET {status_url(running.id)})" if running else ""
        message = f"a {name} is already running for this corpus{where}; one at a time"
        raise ClientException(
            status_code=409, detail=message,
            extra=[{"message": message, "job": msgspec.to_builtins(job_out(running))}] if running else None,
        ) from err
    out = job_out(job)
    return Response(JobAnswer(job=out), status_code=202, headers={"Location": out.status_url})


async def read_job(state: State, job_id: str, wait: float, kind: JobKind | None = None) -> JobOut:
    """The job (after waiting up to `wait` s for its end); 404 for none (of that kind)."""
    st = get_state(state)
    pool = require_pool(st, "reading a job")
    job = None
    if 0 < len(job_id) <= MAX_JOB_ID:
        try:
            job = await st.jobs.get(pool, job_id)
            if job is not None and (kind is None or job.kind == kind):
                job = await st.jobs.wait(pool, job, wait)
        except DB_ERRORS as err:
            raise _unreachable(err) from err
    if job is None or (kind is not None and job.kind != kind):
        raise NotFoundException(f"no {_NAMES[kind] + ' ' if kind else ''}job {job_id!r}")
    return job_out(job)


async def recent_jobs(state: State, kind: JobKind | None = None) -> list[JobOut]:
    st = get_state(state)
    pool = require_pool(st, "reading the jobs")
    try:
        return [job_out(j) for j in await st.jobs.recent(pool, kind)]
    except DB_ERRORS as err:
        raise _unreachable(err) from err


def _unreachable(err: BaseException) -> Exception:
    return DatabaseUnavailableError(f"the database is not reachable ({type(err).__name__})")


Wait = Annotated[float, QueryParameter(ge=0, le=MAX_WAIT_S, description="seconds to wait for the job's end")]


@get("/admin/jobs/{job_id:str}", guards=[admin_guard], responses=client_errors(400, 401, 403, 404, 503),
     summary="A job (re-index, seed, decision fit) from any replica; wait: answer as soon as it ends")
async def job_status(state: State, job_id: FromPath[str], wait: Wait = 0) -> JobAnswer:
    return JobAnswer(job=await read_job(state, job_id, wait))


@get("/admin/jobs", guards=[admin_guard], responses=client_errors(400, 401, 403, 503),
     summary="The corpus's recent jobs, newest first")
async def list_jobs(
    state: State, kind: Annotated[JobKind | None, QueryParameter(description="only jobs of this kind")] = None,
) -> JobList:
    return JobList(jobs=await recent_jobs(state, kind))


ROUTES = [job_status, list_jobs]
