"""The conversation fields of /retrieve and /context: wire ↔ the conversation stage.

`history`, `ui_context` and `reply_to` in; `clarification` (signed) and
`conversation` (what the stage did) out. A `reply_to` that cannot be trusted is
a 400 naming the problem, before anything runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import msgspec
from litestar.datastructures import State

from service.api.body import invalid
from service.api.schemas import (
    ClarificationOut,
    ConversationOut,
    TurnIn,
    UiContextIn,
)
from service.conversation.clarification import ClarificationError, issue, verify
from service.conversation.keys import SigningKeys
from service.conversation.stage import Conversation, clarification_kind, options_of
from service.conversation.topic import Screen, Turn
from service.domain.conversation import ConversationTrace
from service.domain.outcome import Outcome
from service.domain.types import Clarify
from service.feedback.records import CONVERSATION
from service.flags import Flags
from service.state import get_state

KEYS_KEY = "clarification_keys"
Clock = Callable[[], float]
CLOCK_KEY = "conversation_clock"
"""Tests put a clock here to age clarifications without waiting."""


def _keys(state: State) -> SigningKeys:
    keys = state.get(KEYS_KEY)
    if not isinstance(keys, SigningKeys):
        keys = SigningKeys(get_state(state).settings.clarification_key)
        state[KEYS_KEY] = keys
    return keys


def _now(state: State) -> float:
    clock = state.get(CLOCK_KEY)
    return clock() if callable(clock) else time.time()


async def _key(state: State) -> bytes:
    return await _keys(state).key(get_state(state).pool)


def screen_of(ui: UiContextIn | None) -> Screen | None:
    if ui is None:
        return None
    return Screen(screen=ui.screen, entry=ui.entry, workspace=ui.workspace, open_panels=tuple(ui.open_panels),
                  visible_widgets=tuple(ui.visible_widgets), focused=ui.focused)


async def conversation_of(
    state: State, flags: Flags, history: Sequence[TurnIn], ui_context: UiContextIn | None,
    reply_to: ClarificationOut | None,
) -> Conversation | None:
    """The stage's input, or None for a message on its own (the pipeline then skips the stage)."""
    if not history and ui_context is None and reply_to is None:
        CONVERSATION.set(None)
        return None
    verified = None
    if reply_to is not None:
        try:
            verified = verify(msgspec.to_builtins(reply_to), key=await _key(state), now=_now(state),
                              max_age_s=flags.conversation.reply_ttl_s)
        except ClarificationError as exc:
            raise invalid("reply_to", str(exc)) from None
    turns = tuple(Turn(role=t.role, content=t.content, doc_slugs=tuple(t.doc_slugs)) for t in history)
    CONVERSATION.set({
        "history_turns": len(turns),
        "ui_context": None if ui_context is None else msgspec.to_builtins(ui_context),
        "reply_to": None if verified is None else {"query": verified.query,
                                                   "options": [o.doc_slug for o in verified.options]},
    })
    return Conversation(history=turns, screen=screen_of(ui_context), reply_to=verified)


async def clarification_for(state: State, outcome: Outcome, asked: str) -> ClarificationOut | None:
    """A signed clarification for a `clarify` response (None otherwise)."""
    decision = outcome.decision
    if outcome.status != "clarify" or not isinstance(decision, Clarify):
        return None
    # The question the user is asked about: the resolved one when a topic was carried in.
    query = outcome.conversation.query if outcome.conversation is not None else asked
    signed = issue(kind=clarification_kind(decision), query=query, options=options_of(decision),
                   key=await _key(state), now=_now(state))
    return msgspec.convert(msgspec.to_builtins(signed), ClarificationOut)


def conversation_out(trace: ConversationTrace | None) -> ConversationOut | None:
    if trace is None:
        return None
    return ConversationOut(query=trace.query, topic=trace.topic, from_turn=trace.from_turn, carried=trace.carried,
                           screen=trace.screen, reply=trace.reply, chosen=trace.chosen, notes=list(trace.notes))

