"""Wire types of /retrieve (msgspec Structs; Litestar documents them in OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from litestar.exceptions import ValidationException

from service.conversation.clarification import FormatVersion
from service.domain.outcome import FallbackStep
from service.domain.types import Base
from service.flags import Flags

Status = Literal["answer", "clarify", "no_match", "disabled"]

MAX_QUERY_CHARS = 500
"""The one query limit: characters after cleaning (NFKC, controls and invisible
characters out, whitespace collapsed, trimmed); the body limit bounds the raw text."""

QUERY_DESCRIPTION = (
    f"1–{MAX_QUERY_CHARS} characters after cleaning: NFKC-normalised, control and invisible "
    "format characters removed, runs of whitespace collapsed, trimmed"
)
# minLength is published (an empty string is refused) but checked by the handler,
# so every query-length problem gets the same message (the limit is after cleaning).
Query = Annotated[str, msgspec.Meta(description=QUERY_DESCRIPTION, extra_json_schema={"minLength": 1})]

TOP_K_FLAG = "retrieval.max_top_k"


MAX_HISTORY_TURNS = 10
MAX_TURN_CHARS = 2000
MAX_UI_ITEMS = 10

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
Slug = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class TurnIn(Base, frozen=True):
    """One earlier turn of the chat, oldest first."""

    role: Literal["user", "assistant"]
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TURN_CHARS)]
    doc_slugs: Annotated[list[Slug], msgspec.Meta(
        max_length=MAX_UI_ITEMS, description="for an assistant turn: the pages it answered with",
    )] = msgspec.field(default_factory=list)


class UiContextIn(Base, frozen=True):
    """The screen the user is on, e.g. `{"screen": "workspace", "focused": "widget:quick_links"}`."""

    screen: Annotated[str, msgspec.Meta(
        min_length=1, max_length=32, pattern=r"^[a-z][a-z0-9_-]*$",
        description="dashboard | workspace | note | settings | …",
    )]
    entry: Name | None = None
    workspace: Name | None = None
    open_panels: Annotated[list[Name], msgspec.Meta(max_length=MAX_UI_ITEMS)] = msgspec.field(default_factory=list)
    visible_widgets: Annotated[list[Name], msgspec.Meta(max_length=MAX_UI_ITEMS)] = msgspec.field(
        default_factory=list
    )
    focused: Annotated[Name, msgspec.Meta(description="the element with focus, e.g. `widget:quick_links`")] | None = None


class ClarificationOptionOut(Base, frozen=True):
    doc_slug: str
    title: str
    category: str


class ClarificationOut(Base, frozen=True):
    """Opaque to the client: send it back unchanged as `reply_to` with the user's answer.
    Signed and self-contained (any replica can resolve it); expires after the flag
    `conversation.reply_ttl_s`."""

    v: FormatVersion
    kind: Literal["choose", "confirm", "weak"]
    query: str
    options: list[ClarificationOptionOut]
    issued_at: int
    signature: str


class ConversationOut(Base, frozen=True):
    """How history, ui_context or reply_to shaped this answer."""

    query: str
    """What was searched."""
    topic: Literal["message", "history", "screen", "reply"]
    from_turn: int | None
    """Index into `history` of the turn whose topic was carried."""
    carried: str
    screen: str | None
    reply: str | None
    chosen: str | None
    notes: list[str]


class RetrieveRequest(Base, frozen=True):
    """`query` is 1–500 characters after cleaning; `phase` caps the phase used."""

    query: Query
    phase: Annotated[int, msgspec.Meta(ge=1, le=3)] | None = None
    top_k: Annotated[int, msgspec.Meta(
        ge=1, description=f"results wanted; at most the flag `{TOP_K_FLAG}` (the schema's maximum)",
    )] | None = None
    category: Annotated[str, msgspec.Meta(
        max_length=64,
        description="one of the loaded corpus's categories (GET /documents lists them); another answers 400 naming them",
    )] | None = None
    history: Annotated[list[TurnIn], msgspec.Meta(
        max_length=MAX_HISTORY_TURNS, description="up to 10 earlier turns, oldest first",
    )] = msgspec.field(default_factory=list)
    ui_context: UiContextIn | None = None
    reply_to: Annotated[ClarificationOut, msgspec.Meta(
        description="the previous response's `clarification`, unchanged, when `query` answers it",
    )] | None = None


def check_top_k(top_k: int | None, flags: Flags) -> None:
    """`top_k` against the flag in force (a runtime override moves it)."""
    limit = flags.retrieval.max_top_k
    if top_k is not None and top_k > limit:
        raise ValidationException(
            f"`top_k`: at most {limit} (flag `{TOP_K_FLAG}`), got {top_k}",
            extra=[{"field": "top_k", "message": f"at most {limit}, got {top_k}"}],
        )


class OptionOut(Base, frozen=True):
    doc_slug: str
    title: str
    category: str


class RetrievalResult(Base, frozen=True):
    """The seed plan's evidence object, plus the chunk fields of phase 2+."""

    doc_slug: str
    title: str
    category: str
    snippet: str
    score: float
    content_hash: str
    matched_terms: list[str]
    source: Literal["keyword", "hybrid", "embedding", "cache"]
    header_path: str | None = None
    match_explain: list[str] | None = None
    chunk_index: int | None = None
    chunk_hash: str | None = None
    anchor: str | None = None
    """The chunk's heading as a URL fragment (`pin-a-command`; "" = top of the page)."""


class RetrieveResponse(Base, frozen=True):
    status: Status
    message: str
    options: list[OptionOut]
    results: list[RetrievalResult]
    confidence: float
    phase: int
    """The phase that produced the answer (0: cache or generic reply)."""
    fallback_path: list[FallbackStep]
    latency_ms: float
    request_id: str
    source_tier: str = ""
    clarification: ClarificationOut | None = None
    """Set whenever `status` is `clarify`; send it back as `reply_to` with the user's answer."""
    conversation: ConversationOut | None = None
    """Set when the request carried history, ui_context or reply_to."""

