"""POST /context: the same retrieval as /retrieve, assembled into a budgeted LLM context.

Tokens are counted with the embedding model's own WordPiece tokenizer
(all-MiniLM-L6-v2 by default, loaded offline; `tokenizer` in the response
names it), the same counter the chunker caps chunks with.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, post
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import JSONBody

from service.api.body import invalid, strict_required
from service.api.conversation import clarification_for, conversation_of, conversation_out
from service.api.errors import client_errors
from service.api.retrieve import fallback_of, options_of, validate_request
from service.api.schemas import (
    MAX_HISTORY_TURNS,
    ClarificationOut,
    ConversationOut,
    OptionOut,
    Query,
    RetrieveRequest,
    Status,
    TurnIn,
    UiContextIn,
)
from service.context.builder import BudgetTooSmall, build_context, check_minimum
from service.context.passages import answered_page, concepts_of, full_page_of, passages_of
from service.context.types import (
    Budget,
    ContextInputs,
    ContextResult,
    ContextSection,
    Dropped,
    Message,
    UiState,
    WidgetState,
    budget_of,
)
from service.domain.outcome import FallbackStep
from service.domain.types import Base
from service.feedback.records import ENDPOINT, TYPED
from service.ingest.tokens import get_token_counter, model_name_for
from service.pipeline import Pipeline

MAX_MESSAGES = 5
MAX_WIDGETS = 10
MAX_PANELS = 10
MAX_BUDGET = 8000
MAX_BODY_BYTES = 32 * 1024
"""Room for 5 messages of 2,000 characters plus the UI state (the app default is 16 KiB)."""

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
Positive = Annotated[int, msgspec.Meta(ge=1, le=MAX_BUDGET)]


class WidgetStateIn(Base, frozen=True):
    widget: Name
    summary: Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class MessageIn(Base, frozen=True):
    role: Literal["user", "assistant"]
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)]


class BudgetIn(Base, frozen=True):
    """Per-request overrides of `flags.yaml` `context:`; omitted keys keep the flag."""

    core_concepts: Positive | None = None
    retrieved_docs: Positive | None = None
    ui_context: Positive | None = None
    widget_states: Positive | None = None
    recent_messages: Positive | None = None
    total: Positive | None = None
    max_chunks_per_doc: Annotated[int, msgspec.Meta(ge=1, le=10)] | None = None


class ContextRequest(Base, frozen=True):
    query: Query
    ui_context: UiContextIn | None = None
    widget_states: Annotated[list[WidgetStateIn], msgspec.Meta(max_length=MAX_WIDGETS)] = msgspec.field(
        default_factory=list
    )
    recent_messages: Annotated[list[MessageIn], msgspec.Meta(
        max_length=MAX_MESSAGES, description="The last 3–5 chat turns, oldest first (at most 5)",
    )] = msgspec.field(default_factory=list)
    budget: BudgetIn | None = None
    history: Annotated[list[TurnIn], msgspec.Meta(
        max_length=MAX_HISTORY_TURNS, description="up to 10 earlier turns, oldest first (as POST /retrieve)",
    )] = msgspec.field(default_factory=list)
    reply_to: Annotated[ClarificationOut, msgspec.Meta(
        description="the previous response's `clarification`, unchanged, when `query` answers it",
    )] | None = None


class ContextResponse(Base, frozen=True):
    status: Status
    message: str
    options: list[OptionOut]
    confidence: float
    phase: int
    fallback_path: list[FallbackStep]
    request_id: str
    sections: list[ContextSection]
    total_tokens: int
    total_budget: int
    text: str
    dropped: list[Dropped]
    tokenizer: str
    latency_ms: float
    """Retrieval plus assembly."""
    clarification: ClarificationOut | None = None
    """Set whenever `status` is `clarify`; send it back as `reply_to` (as with POST /retrieve)."""
    conversation: ConversationOut | None = None


def _inputs(data: ContextRequest) -> tuple[UiState | None, tuple[WidgetState, ...], tuple[Message, ...]]:
    ui = data.ui_context
    state = None if ui is None else UiState(
        screen=ui.screen, entry=ui.entry, workspace=ui.workspace, open_panels=tuple(ui.open_panels)
    )
    widgets = tuple(WidgetState(widget=w.widget, summary=w.summary) for w in data.widget_states)
    messages = tuple(Message(role=m.role, content=m.content) for m in data.recent_messages)
    return state, widgets, messages


def _assemble(inputs: ContextInputs, budget: Budget, overridden: set[str]) -> ContextResult:
    """Blocking: loads the tokenizer once per process (~50 ms), then counts. A budget too small
    to carry the answer is a BudgetTooSmall naming it (the request's `budget.*`, else the flag)."""
    counter = get_token_counter()
    tokenizer = f"{model_name_for(counter.model_dir)} WordPiece (Hugging Face tokenizers)"
    names = {key: f"budget.{key}" if key in overridden else f"context.{key} (flag)" for key in ("retrieved_docs", "total")}
    check_minimum(inputs, budget, counter.count, names)
    return build_context(inputs, budget, counter.count, tokenizer)


@post("/context", summary="Budgeted LLM context: core concepts, documentation, UI state",
      status_code=200, request_max_body_size=MAX_BODY_BYTES,
      responses=client_errors(400, 413))
async def context(
    data: JSONBody[ContextRequest], state: State, request: Request[Any, Any, Any], pipeline: NamedDependency[Pipeline],
) -> ContextResponse:
    started = time.perf_counter()
    data = await strict_required(request, ContextRequest)
    params = validate_request(RetrieveRequest(query=data.query))
    overrides = msgspec.structs.asdict(data.budget) if data.budget else None
    budget = budget_of(pipeline.flags().context, overrides)
    ENDPOINT.set("context")  # the query log tells /context calls from /retrieve ones
    TYPED.set(params.query)
    conversation = await conversation_of(state, pipeline.flags(), data.history, data.ui_context, data.reply_to)
    outcome = await pipeline.run_request(dataclasses.replace(params, conversation=conversation))
    ui, widgets, messages = _inputs(data)
    inputs = ContextInputs(
        status=outcome.status, message=outcome.message,
        passages=passages_of(
            outcome.results, pipeline.indexes, budget.window_chars,
            full_page_of(outcome.status, outcome.confidence, outcome.reason, outcome.results,
                         budget.full_page_confidence),
        ),
        answered=answered_page(outcome.status, outcome.results),
        options=tuple(f"{o.title} ({o.category})" for o in outcome.options),
        concepts=concepts_of(pipeline.cache.concepts), ui=ui, widgets=widgets, messages=messages,
    )
    overridden = {key for key, value in (overrides or {}).items() if value is not None}
    try:
        result = await asyncio.to_thread(_assemble, inputs, budget, overridden)
    except BudgetTooSmall as err:
        raise invalid(err.name.split(" ")[0], str(err)) from None
    return ContextResponse(
        status=outcome.status, message=outcome.message, options=options_of(outcome.options),
        confidence=outcome.confidence, phase=outcome.phase, fallback_path=fallback_of(outcome),
        request_id=outcome.request_id, sections=result.sections, total_tokens=result.total_tokens,
        total_budget=result.total_budget, text=result.text, dropped=result.dropped,
        tokenizer=result.tokenizer, latency_ms=round((time.perf_counter() - started) * 1000, 3),
        clarification=await clarification_for(state, outcome, params.query),
        conversation=conversation_out(outcome.conversation),
    )


ROUTES: list[object] = [context]
