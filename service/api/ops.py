"""Operator endpoints: runtime flags, kill switch, metrics.

- `GET /admin/flags`: every effective value with its source (file, env,
  override, kill_switch), the kill-switch state with its window figures and
  recent trips/recoveries, and the last audit rows.
- `PUT /admin/flags`: `{"name": "phase", "value": 2}` or a map
  `{"phase": 2, "kill_switch.p95_ms": 400}`; validated by the flags schema
  (400 naming the field), stored with an audit row, pushed to every replica.
- `DELETE /admin/flags/{name}`: drop an override (404 if there is none).
- `POST /admin/kill` (optional `{"reason": ...}`): disable retrieval now.
- `POST /admin/reset`: clear every trip and a manual kill now.
- `GET /metrics`: Prometheus text format (unauthenticated, like most scrape
  targets: it holds counts and latencies, no query text).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import HttpMethod, Request, Response, delete, get, post, put, route
from litestar.datastructures import State
from litestar.exceptions import ClientException, NotFoundException
from litestar.openapi import ResponseSpec
from litestar.params import Body, FromPath

from service.api.auth import admin_guard
from service.api.body import strict_body
from service.api.errors import client_errors
from service.api.openapi import FlagOverrideOperation, OptionalBodyOperation
from service.api.unavailable import database_write, require_pool
from service.domain.types import Base
from service.flags import FlagError
from service.operations import OPS_KEY, Operations
from service.state import get_state
from service.telemetry import PROMETHEUS_CONTENT_TYPE


class KillRequest(Base, frozen=True):
    reason: Annotated[str, msgspec.Meta(max_length=200)] = "manual override"


def operations_of(state: State) -> Operations:
    ops: Operations = state[OPS_KEY]
    return ops


def _actor(request: Request[Any, Any, Any]) -> str:
    return request.client.host if request.client else ""


def _changes(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ClientException(status_code=400, detail="send {\"name\": ..., \"value\": ...} or a map",
                              extra=[{"field": "(body)", "message": "expected a JSON object"}])
    if set(data) == {"name", "value"}:
        name = data["name"]
        if not isinstance(name, str):
            raise ClientException(status_code=400, detail="`name` must be a flag name (a string)",
                                  extra=[{"field": "name", "message": "expected a flag name"}])
        return {name: data["value"]}
    return data


@route("/admin/flags", http_method=[HttpMethod.OPTIONS], include_in_schema=False,
       sync_to_thread=False)
def flags_options(request: Request[Any, Any, Any]) -> Response[None]:
    """OPTIONS /admin/flags, registered before GET and PUT.

    Litestar 2.25 builds the automatic OPTIONS handler for the first handler
    registered on a path and keeps it when another method joins the route, so
    `Allow` said `GET, OPTIONS`; this one reads the route's methods when asked.
    """
    methods = {m for r in request.app.routes if r.path == request.url.path for m in r.methods}
    return Response(None, status_code=204, headers={"Allow": ", ".join(sorted(methods))})


@get("/admin/flags", guards=[admin_guard], responses=client_errors(401, 403),
     summary="Effective flags with their source, kill-switch state and windows")
async def get_flags(state: State) -> dict[str, Any]:
    ops = operations_of(state)
    body = ops.describe()
    pool = get_state(state).pool
    body["audit"] = []
    if pool is not None:
        try:
            body["audit"] = await ops.store.audit(pool)
        except Exception as err:  # the database may be down: the rest is in memory
            body["audit_error"] = f"{type(err).__name__}: {err}"
    return body


@put("/admin/flags", guards=[admin_guard], status_code=200, responses=client_errors(400, 401, 403, 413, 415, 503),
     operation_class=FlagOverrideOperation,
     summary="Set runtime overrides: {name, value} or a map of flag → value")
async def put_flags(
    state: State, request: Request[Any, Any, Any],
    data: Annotated[dict[str, Any], Body(description='{"name": "phase", "value": 2} or {"phase": 2}')],
) -> dict[str, Any]:
    ops = operations_of(state)
    changes = _changes(data)
    try:
        ops.store.validate(changes)
    except FlagError as err:
        named = [name for name in changes if f"`{name}`" in str(err)] or ["(body)"]
        raise ClientException(status_code=400, detail=str(err),
                              extra=[{"field": name, "message": str(err)} for name in named]) from err
    # Stored first, applied after the commit: a change the database did not take is
    # refused (503), never kept only in this replica's memory.
    pool = require_pool(get_state(state), "flag change")
    async with database_write("flag change"):
        done = await ops.store.set(pool, changes, _actor(request))
    return {"changed": [{"name": c.name, "old_value": c.old_value, "new_value": c.new_value}
                        for c in done],
            "overrides": ops.store.overrides}


@delete("/admin/flags/{name:str}", guards=[admin_guard], status_code=200,
        responses=client_errors(401, 403, 404, 503), summary="Drop a runtime override")
async def delete_flag(state: State, request: Request[Any, Any, Any], name: FromPath[str]) -> dict[str, Any]:
    ops = operations_of(state)
    pool = require_pool(get_state(state), "flag change")
    async with database_write("flag change"):
        change = await ops.store.delete(pool, name, _actor(request))
    if change is None:
        raise NotFoundException(f"no override for `{name}`")
    return {"deleted": name, "old_value": change.old_value, "overrides": ops.store.overrides}


@post("/admin/kill", guards=[admin_guard], status_code=200,
      responses=client_errors(400, 401, 403, 413, 415), operation_class=OptionalBodyOperation,
      summary="Disable retrieval now (until POST /admin/reset)")
async def kill(
    state: State, request: Request[Any, Any, Any],
    data: Annotated[KillRequest | None, Body(description='optional {"reason": "..."}')] = None,
) -> dict[str, Any]:
    body = await strict_body(request, KillRequest, optional=True)
    ops = operations_of(state)
    ops.kill_switch.kill((body or KillRequest()).reason)
    return ops.describe()["kill_switch"]  # type: ignore[no-any-return]


@post("/admin/reset", guards=[admin_guard], status_code=200, responses=client_errors(401, 403),
      summary="Clear kill-switch trips and a manual kill now")
async def reset(state: State) -> dict[str, Any]:
    ops = operations_of(state)
    ops.kill_switch.reset()
    return ops.describe()["kill_switch"]  # type: ignore[no-any-return]


# Litestar appends "; charset=utf-8" to every text/* media type itself.
METRICS_MEDIA_TYPE = PROMETHEUS_CONTENT_TYPE.split("; charset=")[0]


@get("/metrics", summary="Prometheus metrics (text exposition format 0.0.4)", sync_to_thread=False,
     media_type=METRICS_MEDIA_TYPE,
     responses={200: ResponseSpec(data_container=str, media_type=METRICS_MEDIA_TYPE,
                                  description="Prometheus text format", generate_examples=False)})
def metrics(state: State) -> Response[bytes]:
    return Response(operations_of(state).telemetry.metrics_text(), media_type=METRICS_MEDIA_TYPE)


ROUTES = [flags_options, get_flags, put_flags, delete_flag, kill, reset, metrics]
