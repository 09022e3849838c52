"""`POST /admin/reindex`: embed what is missing, or (full) re-embed every chunk, as a job
(`service/api/jobs.py`): 202 at once, the work in the background, one at a time per corpus."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, post
from litestar.datastructures import State
from litestar.exceptions import ServiceUnavailableException
from litestar.params import Body

from service.api.auth import admin_guard
from service.api.body import strict_body
from service.api.errors import client_errors
from service.api.jobs import JobAnswer, start_job
from service.api.openapi import OptionalBodyOperation
from service.api.unavailable import RETRY_AFTER_S
from service.domain.types import Base
from service.job_store import JobFailed, Steps
from service.state import get_state


class ReindexRequest(Base, frozen=True):
    full: bool = False
    """Re-embed every chunk (the old vectors keep serving until replaced)."""


@post("/admin/reindex", guards=[admin_guard], status_code=202,
      responses=client_errors(400, 401, 403, 409, 413, 503), operation_class=OptionalBodyOperation,
      summary="Start embedding chunks lacking a current vector (or all of them with full=true): 202 with the job")
async def admin_reindex(
    state: State,
    request: Request[Any, Any, Any],
    data: Annotated[ReindexRequest | None, Body(description="optional; {} or {\"full\": true}")] = None,
) -> Response[JobAnswer]:
    data = await strict_body(request, ReindexRequest, optional=True)
    full = data is not None and data.full
    st = get_state(state)
    reindex = st.reindex
    if reindex is None:
        raise ServiceUnavailableException("the embedding index is not wired",
                                          headers={"Retry-After": str(RETRY_AFTER_S)})
    steps = Steps("starting")

    async def work() -> dict[str, Any]:
        report = await reindex(full, steps.say)
        if report is None:
            error = st.semantic.error if st.semantic else None
            raise JobFailed(f"indexing failed: {error}")
        result: dict[str, Any] = msgspec.to_builtins(report)
        return result

    return await start_job(state, "reindex", request, work, steps.snapshot, {"full": full})


ROUTES = [admin_reindex]
