"""POST /retrieve: validate the request, run the pipeline, return evidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from litestar import Request, post
from litestar.datastructures import State
from litestar.exceptions import ValidationException
from litestar.params import JSONBody

from service.api.body import strict_required
from service.api.documents import check_category, corpus_categories
from service.api.errors import client_errors
from service.api.schemas import MAX_QUERY_CHARS, RetrieveRequest, RetrieveResponse, check_top_k
from service.normalize.text import clean
from service.pipeline import Pipeline, RetrieveParams
from service.state import get_state

PIPELINE_KEY = "pipeline"


def validate_request(data: RetrieveRequest, categories: Sequence[str] = ()) -> RetrieveParams:
    """The checks msgspec cannot express: trimmed length, the corpus's category names."""
    query = clean(data.query)
    if not 1 <= len(query) <= MAX_QUERY_CHARS:
        raise ValidationException(
            f"query must be 1–{MAX_QUERY_CHARS} characters after trimming (got {len(query)})",
            extra=[{"field": "query", "message": f"{len(query)} characters after cleaning"}],
        )
    check_category(data.category, categories)
    return RetrieveParams(query=query, phase_cap=data.phase, top_k=data.top_k, category=data.category)


def pipeline_of(state: State) -> Pipeline:
    pipeline: Pipeline = state[PIPELINE_KEY]
    return pipeline


@post("/retrieve", summary="Retrieve documentation evidence and a decision", status_code=200,
      responses=client_errors(400, 413))
async def retrieve(
    data: JSONBody[RetrieveRequest], state: State, request: Request[Any, Any, Any]
) -> RetrieveResponse:
    categories = corpus_categories(get_state(state))
    params = validate_request(await strict_required(request, RetrieveRequest), categories)
    pipeline = pipeline_of(state)
    check_top_k(params.top_k, pipeline.flags())
    return await pipeline.run_request(params)


ROUTES: list[object] = [retrieve]
