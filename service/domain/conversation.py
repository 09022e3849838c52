"""What the conversation stage did with a message: the evidence a response carries."""

from __future__ import annotations

from typing import Literal

from service.domain.types import Base

TopicSource = Literal["message", "history", "screen", "reply"]


class ConversationTrace(Base, frozen=True):
    """How the message was read before retrieval (null on the wire when no conversation fields came)."""

    query: str
    """The question that was searched: the message, with a carried topic or the original question of a reply."""
    topic: TopicSource
    """Where the topic came from: the message itself, an earlier turn, the screen, or a clarification reply."""
    from_turn: int | None = None
    """Index into `history` (oldest first, 0-based) of the turn whose topic was carried."""
    carried: str = ""
    """The words carried in (from the turn or the screen)."""
    screen: str | None = None
    """The screen element used: to read "this"/"here", or to break a near-tie."""
    reply: str | None = None
    """For a reply to a clarification: what it matched ("ordinal 2", "title 'Home'", "yes", "no", "new question")."""
    chosen: str | None = None
    """The page the reply chose."""
    notes: tuple[str, ...] = ()
    """One line per thing the stage did, in order."""
