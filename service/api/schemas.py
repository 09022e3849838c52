"""Wire types of /retrieve (msgspec Structs; Litestar documents them in OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from service.domain.types import Base

Status = Literal["answer", "clarify", "no_match", "disabled"]

MAX_QUERY_CHARS = 500


class RetrieveRequest(Base, frozen=True):
    """`query` is 1–500 characters after trimming; `phase` caps the phase used."""

    query: Annotated[str, msgspec.Meta(max_length=4 * MAX_QUERY_CHARS, description="1–500 characters after trimming")]
    phase: Annotated[int, msgspec.Meta(ge=1, le=3)] | None = None
    top_k: Annotated[int, msgspec.Meta(ge=1, le=10)] | None = None
    category: Annotated[str, msgspec.Meta(
        max_length=64,
        description="one of the loaded corpus's categories (GET /documents lists them); another answers 400 naming them",
    )] | None = None


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


class FallbackStep(Base, frozen=True):
    """A tier that was tried and passed over, and why."""

    tier: str
    reason: str


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

