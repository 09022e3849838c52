"""Operator curations (admin token):

- `GET /admin/curations`: every curation, each with `stale` (its page or section
  left the corpus: it is skipped, never an error), and the recent audit rows;
- `POST /admin/curations`: `{query, match: exact|contains, action: pin|hide, doc_slug,
  header_path?, note?}`; the query is normalised as a request would be; an unknown
  page or section is a 400, a duplicate a 409;
- `DELETE /admin/curations/{id}`: remove one (404 if unknown).
Changes reach every replica through LISTEN/NOTIFY, like flags.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import HttpMethod, Request, Response, delete, get, post, route
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.exceptions import ClientException, NotFoundException
from litestar.params import FromPath, JSONBody

from service.api.auth import admin_guard
from service.api.body import invalid, strict_required
from service.api.errors import client_errors
from service.api.feedback import Slug, unavailable
from service.api.schemas import MAX_QUERY_CHARS
from service.curation.curator import CURATOR_KEY, Curator
from service.curation.store import DuplicateCuration
from service.domain.types import Base
from service.feedback.log_writer import DB_ERRORS
from service.normalize.text import clean
from service.pipeline import Pipeline
from service.state import get_state


class CurationRequest(Base, frozen=True):
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_QUERY_CHARS)]
    match: Literal["exact", "contains"]
    action: Literal["pin", "hide"]
    doc_slug: Slug
    header_path: Annotated[str, msgspec.Meta(min_length=1, max_length=500)] | None = None
    """Pin one section of the page (its header path, e.g. `Quick Links > Editing links`)."""
    note: Annotated[str, msgspec.Meta(max_length=1000)] | None = None


def curator_of(state: State) -> Curator:
    value: Curator = state[CURATOR_KEY]
    return value


def _actor(request: Request[Any, Any, Any]) -> str:
    return f"admin@{request.client.host if request.client else 'unknown'}"


@route("/admin/curations", http_method=[HttpMethod.OPTIONS], include_in_schema=False, sync_to_thread=False)
def curations_options(request: Request[Any, Any, Any]) -> Response[None]:
    """Registered before GET and POST: Litestar 2.25's automatic OPTIONS would list
    only the first handler's methods (as for /admin/flags in api/ops.py)."""
    methods = {m for r in request.app.routes if r.path == request.url.path for m in r.methods}
    return Response(None, status_code=204, headers={"Allow": ", ".join(sorted(methods))})


@get("/admin/curations", guards=[admin_guard], responses=client_errors(401, 403),
     summary="Curations in force (with stale ones flagged) and the audit trail")
async def list_curations(state: State) -> dict[str, Any]:
    curator = curator_of(state)
    items = []
    for cur in curator.store.active:
        reason = curator.stale_reason(cur)
        items.append({**msgspec.to_builtins(cur), "stale": reason is not None, "stale_reason": reason})
    body: dict[str, Any] = {"curations": items, "listener_connected": curator.store.listener_connected,
                            "audit": []}
    pool = get_state(state).pool
    if pool is not None:
        try:
            body["audit"] = await curator.store.audit(pool)
        except DB_ERRORS as err:
            body["audit_error"] = f"{type(err).__name__}: {err}"
    return body


@post("/admin/curations", guards=[admin_guard], status_code=201,
      responses=client_errors(400, 401, 403, 409, 503), summary="Pin or hide a page for a query")
async def create_curation(
    data: JSONBody[CurationRequest], state: State, request: Request[Any, Any, Any], pipeline: NamedDependency[Pipeline],
) -> dict[str, Any]:
    body = await strict_required(request, CurationRequest)
    curator = curator_of(state)
    if body.action == "hide" and body.header_path is not None:
        raise invalid("header_path", "only a pin can name a section")
    if not curator.has_page(body.doc_slug):
        raise invalid("doc_slug", f"no page {body.doc_slug!r} in the corpus")
    if body.header_path is not None and not curator.has_section(body.doc_slug, body.header_path):
        raise invalid("header_path", f"{body.doc_slug} has no section {body.header_path!r}")
    normalised, _ = pipeline.normalise(clean(body.query), pipeline.flags())
    if not normalised.phrase:
        raise invalid("query", f"{body.query!r} has no words left after normalisation (only stopwords)")
    pool = get_state(state).pool
    if pool is None:
        raise unavailable("the database is not reachable; try again later")
    try:
        made = await curator.store.create(
            pool, match=body.match, phrase=normalised.phrase, query=body.query, action=body.action,
            doc_slug=body.doc_slug, header_path=body.header_path, note=body.note, actor=_actor(request),
        )
    except DuplicateCuration as err:
        raise ClientException(status_code=409, detail=str(err)) from err
    except DB_ERRORS as err:
        raise unavailable(f"the database is not reachable ({type(err).__name__})") from err
    return msgspec.to_builtins(made)  # type: ignore[no-any-return]


@delete("/admin/curations/{curation_id:str}", guards=[admin_guard], status_code=200,
        responses=client_errors(401, 403, 404, 503), summary="Remove a curation")
async def delete_curation(
    curation_id: FromPath[str], state: State, request: Request[Any, Any, Any]
) -> dict[str, Any]:
    # A str path parameter: a malformed id is "not found" after the admin guard, not before it.
    if not curation_id.isascii() or not curation_id.isdigit() or len(curation_id) > 18:
        raise NotFoundException(f"no curation {curation_id!r}")
    pool = get_state(state).pool
    if pool is None:
        raise unavailable("the database is not reachable; try again later")
    try:
        gone = await curator_of(state).store.delete(pool, int(curation_id), _actor(request))
    except DB_ERRORS as err:
        raise unavailable(f"the database is not reachable ({type(err).__name__})") from err
    if gone is None:
        raise NotFoundException(f"no curation {curation_id}")
    return {"deleted": msgspec.to_builtins(gone)}


ROUTES = [curations_options, list_curations, create_curation, delete_curation]
