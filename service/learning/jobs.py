"""Background fits: one at a time per replica, their status kept in memory (the fits
themselves, and their figures, are in PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import asyncpg

from service.evaluation.from_review import FitOutcome, NotEnoughReviews, Progress

log = logging.getLogger(__name__)

KEEP_JOBS = 20
State = Literal["running", "done", "failed"]
Work = Callable[[Progress], Awaitable[FitOutcome]]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclass
class FitJob:
    id: str
    actor: str
    started_at: str = field(default_factory=_now)
    state: State = "running"
    progress: Progress = field(default_factory=Progress)
    finished_at: str | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    task: asyncio.Task[None] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "actor": self.actor, "started_at": self.started_at,
                "finished_at": self.finished_at, "step": self.progress.step, "cases": self.progress.cases,
                "result": self.result, "error": self.error}


class FitJobs:
    def __init__(self) -> None:
        self.jobs: dict[str, FitJob] = {}

    def running(self) -> FitJob | None:
        return next((j for j in self.jobs.values() if j.state == "running"), None)

    def get(self, job_id: str) -> FitJob | None:
        return self.jobs.get(job_id)

    def start(self, work: Work, actor: str) -> FitJob:
        job = FitJob(id=uuid.uuid4().hex[:16], actor=actor)
        job.task = asyncio.create_task(self._run(job, work), name=f"decision-fit-{job.id}")
        self.jobs[job.id] = job
        for old in list(self.jobs)[:-KEEP_JOBS]:
            if self.jobs[old].state != "running":
                del self.jobs[old]
        return job

    async def _run(self, job: FitJob, work: Work) -> None:
        try:
            outcome = await work(job.progress)
            job.result, job.state = outcome.as_dict(), "done"
        except asyncio.CancelledError:
            job.error, job.state = "stopped: the service shut down", "failed"
            raise
        except (NotEnoughReviews, ValueError, RuntimeError) as err:  # said to the operator as it is
            job.error, job.state = str(err), "failed"
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as err:
            job.error, job.state = f"the database failed during the fit ({type(err).__name__}: {err})", "failed"
        except Exception as err:  # a bug: logged whole, named to the operator
            log.exception("decision fit %s failed", job.id)
            job.error, job.state = f"{type(err).__name__}: {err}", "failed"
        finally:
            job.finished_at = _now()

    async def wait(self, job: FitJob, timeout_s: float) -> None:
        """Until the job ends or `timeout_s` passes (a long poll: no client needs to sleep)."""
        if job.task is None or job.task.done() or timeout_s <= 0:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(job.task), timeout_s)

    async def stop(self) -> None:
        for job in self.jobs.values():
            if job.task is not None and not job.task.done():
                job.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await job.task
