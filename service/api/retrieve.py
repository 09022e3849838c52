"""POST /retrieve: validate the request, run the pipeline, return evidence."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from litestar import Request, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.exceptions import ValidationException
from litestar.params import JSONBody

from service.api.body import strict_required
from service.api.conversation import clarification_for, conversation_of, conversation_out
from service.api.documents import check_category, corpus_categories
from service.api.errors import client_errors
from service.api.schemas import (
    MAX_QUERY_CHARS,
    ClarificationOut,
    OptionOut,
    RetrievalResult,
    RetrieveRequest,
    RetrieveResponse,
    check_top_k,
)
from service.domain.outcome import FallbackStep, Outcome
from service.domain.types import Evidence, Option
from service.feedback.records import TYPED
from service.normalize.text import clean
from service.pipeline import Pipeline, RetrieveParams
from service.state import get_state


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


def result_of(evidence: Evidence) -> RetrievalResult:
    return RetrievalResult(
        doc_slug=evidence.doc_slug,
        title=evidence.title,
        category=evidence.category,
        snippet=evidence.snippet,
        score=round(evidence.score, 4),
        content_hash=evidence.content_hash,
        matched_terms=list(evidence.matched_terms),
        source=evidence.source,
        header_path=evidence.header_path,
        match_explain=list(evidence.match_explain) or None,
        chunk_index=evidence.chunk_index,
        chunk_hash=evidence.chunk_hash,
        anchor=evidence.anchor,
    )


def options_of(options: tuple[Option, ...]) -> list[OptionOut]:
    return [OptionOut(doc_slug=o.doc_slug, title=o.title, category=o.category) for o in options]


def fallback_of(outcome: Outcome) -> list[FallbackStep]:
    return list(outcome.fallback_path)


def response_of(outcome: Outcome, clarification: ClarificationOut | None = None) -> RetrieveResponse:
    """The pipeline's domain outcome → the /retrieve wire response."""
    return RetrieveResponse(
        status=outcome.status, message=outcome.message, options=options_of(outcome.options),
        results=[result_of(e) for e in outcome.results], confidence=outcome.confidence,
        phase=outcome.phase, fallback_path=fallback_of(outcome), latency_ms=outcome.latency_ms,
        request_id=outcome.request_id, source_tier=outcome.tier.value,
        clarification=clarification, conversation=conversation_out(outcome.conversation),
    )


@post("/retrieve", summary="Retrieve documentation evidence and a decision", status_code=200,
      responses=client_errors(400, 413))
async def retrieve(
    data: JSONBody[RetrieveRequest], state: State, request: Request[Any, Any, Any], pipeline: NamedDependency[Pipeline],
) -> RetrieveResponse:
    categories = corpus_categories(get_state(state))
    data = await strict_required(request, RetrieveRequest)
    params = validate_request(data, categories)
    flags = pipeline.flags()
    check_top_k(params.top_k, flags)
    conversation = await conversation_of(state, flags, data.history, data.ui_context, data.reply_to)
    TYPED.set(params.query)  # the query log keeps it beside the text the conversation searched
    outcome = await pipeline.run_request(dataclasses.replace(params, conversation=conversation))
    return response_of(outcome, await clarification_for(state, outcome, params.query))


ROUTES: list[object] = [retrieve]
