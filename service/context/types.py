"""Inputs and outputs of the phase 4 context builder (pure data, no I/O).

The output types (`ContextSection`, `Citation`, `Dropped`) are msgspec Structs so the
/context response can carry them unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import msgspec

from service.domain.types import Base
from service.flags import ContextFlags

DecisionStatus = Literal["answer", "clarify", "no_match", "disabled"]
Role = Literal["user", "assistant"]
DropAction = Literal["dropped", "trimmed"]
DropReason = Literal["per_document_cap", "section_budget", "total_budget"]
Scope = Literal["chunk", "window", "page"]
"""What a documentation passage holds: the retrieved chunk, the chunk with its
neighbours (`context.window_chars`), or its whole page (a confident answer)."""

CORE_CONCEPTS = "Core concepts"
DOCUMENTATION = "Relevant documentation"
UI_CONTEXT = "UI context"
WIDGET_STATES = "Widget states"
RECENT_MESSAGES = "Recent messages"
SECTION_ORDER: tuple[str, ...] = (CORE_CONCEPTS, DOCUMENTATION, UI_CONTEXT, WIDGET_STATES, RECENT_MESSAGES)


class Budget(ContextFlags, frozen=True):
    """Token budgets per section (heading included) and in total: the `context`
    flags with a request's overrides applied (the defaults live in the flags schema)."""

    def __post_init__(self) -> None:
        # The flags' consistency rule (total >= core concepts + documentation) is
        # for the configured defaults; a request may ask for less in total, and the
        # builder then drops or trims what does not fit (listed in `dropped`).
        pass


def budget_of(flags: ContextFlags, overrides: Mapping[str, int | None] | None = None) -> Budget:
    """`flags.context`, then any per-request override that is not None."""
    chosen = {k: v for k, v in (overrides or {}).items() if v is not None}
    unknown = set(chosen) - set(ContextFlags.__struct_fields__)
    if unknown:
        raise ValueError(f"unknown budget keys: {', '.join(sorted(unknown))}")
    if any(v < 1 for v in chosen.values()):
        raise ValueError("budgets must be positive integers")
    return Budget(**(msgspec.structs.asdict(flags) | chosen))


def section_budget(budget: Budget, name: str) -> int:
    return {
        CORE_CONCEPTS: budget.core_concepts,
        DOCUMENTATION: budget.retrieved_docs,
        UI_CONTEXT: budget.ui_context,
        WIDGET_STATES: budget.widget_states,
        RECENT_MESSAGES: budget.recent_messages,
    }[name]


class Passage(Base, frozen=True):
    """One retrieved unit with its full text (a chunk, or a whole document in phase 1)."""

    doc_slug: str
    title: str
    text: str
    score: float
    header_path: str | None = None
    chunk_index: int | None = None
    window_text: str | None = None
    """The chunk with its neighbours on the page (None: no neighbours, or windows off)."""
    page_text: str | None = None
    """The whole page, for the answered page of a confident answer."""


class ConceptText(Base, frozen=True):
    term: str
    text: str


class UiState(Base, frozen=True):
    screen: str
    entry: str | None = None
    workspace: str | None = None
    open_panels: tuple[str, ...] = ()


class WidgetState(Base, frozen=True):
    widget: str
    summary: str


class Message(Base, frozen=True):
    role: Role
    content: str


class Citation(Base, frozen=True):
    """Where a documentation passage came from: `label` is "Title > header path"."""

    doc_slug: str
    title: str
    label: str
    score: float
    tokens: int
    header_path: str | None = None
    chunk_index: int | None = None
    trimmed: bool = False
    scope: Scope = "chunk"


class ContextSection(Base, frozen=True):
    name: str
    tokens: int
    budget: int
    text: str
    citations: list[Citation] = msgspec.field(default_factory=list)


class Dropped(Base, frozen=True):
    """Something left out (`dropped`) or shortened by whole sentences (`trimmed`)."""

    section: str
    item: str
    action: DropAction
    reason: DropReason
    tokens: int
    """Tokens removed."""


class ContextResult(Base, frozen=True):
    sections: list[ContextSection]
    text: str
    total_tokens: int
    total_budget: int
    dropped: list[Dropped]
    tokenizer: str


@dataclass(frozen=True)
class ContextInputs:
    """Everything the builder needs: the decision, full texts and the UI state."""

    status: DecisionStatus
    message: str
    passages: tuple[Passage, ...] = ()
    options: tuple[str, ...] = ()
    """Clarification options as shown to the user, e.g. "Quick Links (widgets)"."""
    concepts: tuple[ConceptText, ...] = ()
    ui: UiState | None = None
    widgets: tuple[WidgetState, ...] = ()
    messages: tuple[Message, ...] = ()
    """Oldest first."""
    answered: str | None = None
    """The slug of the page an answer names: its material is kept first."""
