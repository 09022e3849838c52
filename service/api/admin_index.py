"""`POST /admin/reindex`: embed what is missing, or (full) re-embed every chunk."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, post
from litestar.datastructures import State
from litestar.exceptions import ServiceUnavailableException
from litestar.openapi import ResponseSpec
from litestar.params import Body

from service.api.auth import admin_guard
from service.api.body import strict_body
from service.api.errors import ErrorBody, client_errors
from service.api.openapi import OptionalBodyOperation
from service.api.unavailable import RETRY_AFTER_S, database_write, require_pool
from service.domain.types import Base
from service.ingest.indexer import IndexReport
from service.state import get_state

_ERRORS = {
    **client_errors(400, 413),  # a malformed or oversized optional body
    401: ResponseSpec(data_container=ErrorBody, description="Missing or malformed token"),
    403: ResponseSpec(data_container=ErrorBody, description="Wrong token or admin disabled"),
    503: ResponseSpec(data_container=ErrorBody, description="Database or model not ready"),
}


class ReindexRequest(Base, frozen=True):
    full: bool = False
    """Re-embed every chunk (the old vectors keep serving until replaced)."""


@post("/admin/reindex", guards=[admin_guard], status_code=200, responses=_ERRORS,
      operation_class=OptionalBodyOperation,
      summary="Embed chunks lacking a current vector (or all of them with full=true)")
async def admin_reindex(
    state: State,
    request: Request[Any, Any, Any],
    data: Annotated[ReindexRequest | None, Body(description="optional; {} or {\"full\": true}")] = None,
) -> IndexReport:
    data = await strict_body(request, ReindexRequest, optional=True)
    st = get_state(state)
    require_pool(st, "reindex")
    if st.reindex is None:
        raise ServiceUnavailableException("the embedding index is not wired",
                                          headers={"Retry-After": str(RETRY_AFTER_S)})
    async with database_write("reindex"):
        report = await st.reindex(data is not None and data.full)
    if report is None:
        error = st.semantic.error if st.semantic else None
        raise ServiceUnavailableException(f"indexing failed: {error}",
                                          headers={"Retry-After": str(RETRY_AFTER_S)})
    return report


ROUTES = [admin_reindex]

