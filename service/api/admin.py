"""`POST /admin/seed`: re-seed from `seeds/` and reload the served corpus."""

from __future__ import annotations

from litestar import post
from litestar.datastructures import State
from litestar.exceptions import ClientException
from litestar.openapi import ResponseSpec

from service.api.auth import admin_guard
from service.api.errors import ErrorBody
from service.api.unavailable import database_write, require_pool
from service.ingest.markdown import SeedError
from service.ingest.seeder import SeedReport
from service.state import get_state

_ERRORS = {
    401: ResponseSpec(data_container=ErrorBody, description="Missing or malformed token"),
    403: ResponseSpec(data_container=ErrorBody, description="Wrong token or admin disabled"),
    422: ResponseSpec(data_container=ErrorBody, description="Seed files rejected"),
    503: ResponseSpec(data_container=ErrorBody, description="Database not ready"),
}


@post("/admin/seed", guards=[admin_guard], status_code=200, responses=_ERRORS,
      summary="Seed the corpus from seeds/ (idempotent) and reload it")
async def admin_seed(state: State) -> SeedReport:
    st = get_state(state)
    require_pool(st, "seed")
    try:
        async with database_write("seed"):
            return await st.reseed()
    except SeedError as err:
        raise ClientException(
            status_code=422,
            detail="seed rejected; the previous corpus is still served",
            extra=[{"file": str(e.path), "reason": e.reason} for e in err.errors],
        ) from err
    except FileNotFoundError as err:
        raise ClientException(status_code=422, detail=str(err)) from err


ROUTES = [admin_seed]
