"""`POST /admin/seed`: re-read the seed folder, re-seed and reload the served corpus (as the
`seed` command does, then embedding what changed), as a job (`service/api/jobs.py`): 202 at
once, the work in the background, one at a time per corpus. Rejected files fail the job,
each named in its `result.rejected`; the previous corpus is still served."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.datastructures import State

from service.api.auth import admin_guard
from service.api.errors import client_errors
from service.api.jobs import JobAnswer, start_job
from service.ingest.markdown import SeedError
from service.job_store import JobFailed, Steps
from service.state import get_state


@post("/admin/seed", guards=[admin_guard], status_code=202, responses=client_errors(401, 403, 409, 503),
      summary="Start seeding the corpus from its folder (idempotent) and reloading it: 202 with the job")
async def admin_seed(state: State, request: Request[Any, Any, Any]) -> Response[JobAnswer]:
    st = get_state(state)
    steps = Steps("starting")

    async def work() -> dict[str, Any]:
        try:
            report = await st.reseed(steps.say)
        except SeedError as err:
            raise JobFailed("seed rejected; the previous corpus is still served",
                            {"rejected": [{"file": str(e.path), "reason": e.reason} for e in err.errors]}) from err
        except FileNotFoundError as err:
            raise JobFailed(f"seed rejected: {err}; the previous corpus is still served") from err
        result: dict[str, Any] = msgspec.to_builtins(report)
        return result

    return await start_job(state, "seed", request, work, steps.snapshot)


ROUTES = [admin_seed]
