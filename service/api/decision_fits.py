"""Admin routes of the review-to-fit loop (admin token):

- `POST /admin/decision-fits`: fit the corpus's own decision on its reviewed traffic, in the
  background (`evaluation/from_review.py`), as a job (`api/jobs.py`: stored in PostgreSQL,
  readable from any replica): 202 with the job; 409 naming how many more reviewed queries a
  fit needs, or the fit job already running;
- `GET /admin/decision-fits/jobs/{job_id}[?wait=S]`: a fit job's status (as
  `GET /admin/jobs/{job_id}`); `wait` (≤ 120 s) answers as soon as the job ends (a long poll);
- `GET /admin/decision-fits`: the fit in force, every stored fit with its figures and
  whether it is active, the audit trail and the recent fit jobs;
- `POST /admin/decision-fits/{id}/activate`: make a stored fit the active one (restore);
- `POST /admin/decision-fits/deactivate`: no stored fit decides (the fit file, else the
  portable fit, again).
Activation reaches every replica through LISTEN/NOTIFY, like a flag change.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import HttpMethod, Request, Response, get, post, route
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.exceptions import ClientException, NotFoundException
from litestar.params import FromPath

from service.api.auth import admin_guard
from service.api.errors import client_errors
from service.api.feedback import unavailable
from service.api.jobs import JobAnswer, Wait, actor_of, read_job, recent_jobs, start_job
from service.api.unavailable import database_write, require_pool
from service.evaluation.from_review import NotEnoughReviews, Progress, fit_from_review, reviewed_set
from service.feedback.log_writer import DB_ERRORS
from service.fit_store import FitStore, UnknownFit, UnusableFit
from service.job_store import JobFailed
from service.learning.connect import Learning, learning_of
from service.pipeline import Pipeline
from service.state import get_state


def in_force(state: State, learning: Learning) -> dict[str, Any]:
    decision = get_state(state).decision
    model = learning.decider.active_calibration()
    return {"policy": decision.policy(), "version": model.version if model else None,
            "source": learning.source(), "held_out": learning.held_out(),
            "stored_active": learning.store.active.id if learning.store.active else None,
            "error": learning.store.error}


@route("/admin/decision-fits", http_method=[HttpMethod.OPTIONS], include_in_schema=False, sync_to_thread=False)
def fits_options(request: Request[Any, Any, Any]) -> Response[None]:
    """Registered before GET and POST: Litestar 2.25's automatic OPTIONS (and a 405's `Allow`)
    would list only the first handler's methods (as for /admin/flags in api/ops.py)."""
    methods = {m for r in request.app.routes if r.path == request.url.path for m in r.methods}
    return Response(None, status_code=204, headers={"Allow": ", ".join(sorted(methods))})


@post("/admin/decision-fits", guards=[admin_guard], status_code=202,
      responses=client_errors(401, 403, 409, 503),
      summary="Fit the corpus's own decision on its reviewed traffic (in the background)")
async def start_fit(
    state: State, request: Request[Any, Any, Any], pipeline: NamedDependency[Pipeline],
) -> Response[JobAnswer]:
    st = get_state(state)
    learning = learning_of(state)
    pool = require_pool(st, "a decision fit")
    documents = st.corpus.documents
    async with database_write("a decision fit"):
        reviewed = await reviewed_set(pool, {d.slug for d in documents})
    short = reviewed.shortfall()
    if short is not None:
        raise ClientException(status_code=409, detail=short, extra=[
            {"message": short, "reviewed": len(reviewed.cases), "held_out": len(reviewed.held_out),
             "refused": len(reviewed.refused)}])
    actor = actor_of(request)
    progress = Progress()

    async def work() -> dict[str, Any]:
        current = get_state(state)
        try:
            outcome = await fit_from_review(
                pool if current.pool is None else current.pool, pipeline, pipeline.flags(), current.corpus.documents,
                learning.store, corpus=current.settings.seeds_dir.name, actor=actor, progress=progress,
            )
        except (NotEnoughReviews, ValueError, RuntimeError) as err:  # said to the operator as it is
            raise JobFailed(str(err)) from err
        return outcome.as_dict()

    def snapshot() -> dict[str, Any]:
        return {"step": progress.step, "cases": progress.cases}

    return await start_job(state, "decision_fit", request, work, snapshot)


@get("/admin/decision-fits/jobs/{job_id:str}", guards=[admin_guard], responses=client_errors(400, 401, 403, 404, 503),
     summary="A decision fit job's status, from any replica (wait: answer as soon as it ends, at most that many seconds)")
async def fit_job(state: State, job_id: FromPath[str], wait: Wait = 0) -> JobAnswer:
    return JobAnswer(job=await read_job(state, job_id, wait, kind="decision_fit"))


@get("/admin/decision-fits", guards=[admin_guard], responses=client_errors(401, 403, 503),
     summary="The fit in force, every stored fit with its figures, the audit trail, recent jobs")
async def list_fits(state: State) -> dict[str, Any]:
    learning = learning_of(state)
    pool = require_pool(get_state(state), "reading the decision fits")
    try:
        fits = await FitStore.history(pool)
        audit = await FitStore.audit(pool)
    except DB_ERRORS as err:
        raise unavailable(f"the database is not reachable ({type(err).__name__})") from err
    jobs = await recent_jobs(state, "decision_fit")
    return {"in_force": in_force(state, learning), "fits": [_row(f) for f in fits], "audit": audit,
            "jobs": msgspec.to_builtins(jobs)}


def _row(fit: Any) -> dict[str, Any]:
    return {"id": fit.id, "created_at": fit.created_at, "version": fit.version, "source": fit.source,
            "active": fit.active, "created_by": fit.created_by, "reason": fit.reason, "figures": fit.figures}


@post("/admin/decision-fits/{fit_id:str}/activate", guards=[admin_guard], status_code=200,
      responses=client_errors(401, 403, 404, 409, 503), summary="Make a stored decision fit the one in force")
async def activate_fit(
    state: State, request: Request[Any, Any, Any], fit_id: FromPath[str], pipeline: NamedDependency[Pipeline],
) -> dict[str, Any]:
    # A text id, checked here: a malformed one is simply no fit, and the guard answers first.
    if not fit_id.isascii() or not fit_id.isdigit() or len(fit_id) > 18:
        raise NotFoundException(f"no stored decision fit {fit_id!r}")
    learning = learning_of(state)
    pool = require_pool(get_state(state), "activating a decision fit")
    try:
        async with database_write("activating a decision fit"):
            fit = await learning.store.activate(
                pool, int(fit_id), actor=actor_of(request), reason="activated by hand",
                served_pages=pipeline.decider.served_pages,
            )
    except UnknownFit as err:
        raise NotFoundException(f"no stored decision fit #{fit_id}") from err
    except UnusableFit as err:
        raise ClientException(status_code=409, detail=str(err)) from err
    return {"activated": _row(fit), "in_force": in_force(state, learning)}


@post("/admin/decision-fits/deactivate", guards=[admin_guard], status_code=200,
      responses=client_errors(401, 403, 503),
      summary="No stored decision fit decides (the fit file, else the portable fit, again)")
async def deactivate_fit(state: State, request: Request[Any, Any, Any]) -> dict[str, Any]:
    learning = learning_of(state)
    pool = require_pool(get_state(state), "deactivating the decision fit")
    async with database_write("deactivating the decision fit"):
        fit = await learning.store.deactivate(pool, actor=actor_of(request), reason="deactivated by hand")
    return {"deactivated": _row(fit) if fit is not None else None, "in_force": in_force(state, learning)}


ROUTES = [fits_options, start_fit, fit_job, list_fits, activate_fit, deactivate_fit]
