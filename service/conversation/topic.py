"""Where a message's topic comes from: the message itself, the screen, or the conversation.

A message with a topic of its own ("how do I rename a workspace") is searched as it
is. A message without one ("and how do I resize it?", "how do I rename this") takes
its topic from the screen the user is on when it points at the screen ("this",
"here"), otherwise from the latest answered turn of the conversation.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

Role = Literal["user", "assistant"]

# Words that point at something named earlier in the conversation.
_ANAPHORA = {"it", "its", "that", "them", "they", "those", "these", "one", "ones", "there", "same"}
# Words that point at what is on screen.
_DEICTIC = {"this", "here", "current", "focused", "selected"}
# Openers of a continuation ("and on mobile?", "what about notes?").
_CONTINUATIONS = ("and ", "also ", "what about ", "how about ", "same for ", "then ", "or ")
_SPLIT = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Turn:
    role: Role
    content: str
    doc_slugs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Screen:
    screen: str
    entry: str | None = None
    workspace: str | None = None
    open_panels: tuple[str, ...] = ()
    visible_widgets: tuple[str, ...] = ()
    focused: str | None = None

    def terms(self) -> list[str]:
        """The screen's words, most specific first (what the user is looking at)."""
        ordered = [self.focused, self.screen, *self.open_panels, *self.visible_widgets]
        seen: list[str] = []
        for value in ordered:
            if not value:
                continue
            words = " ".join(_words(value.replace("_", " ").replace("-", " ").replace(":", " ")))
            if words and words not in seen:
                seen.append(words)
        return seen


@dataclass(frozen=True)
class Topic:
    """The text to search and where its topic came from."""

    query: str
    source: Literal["message", "screen", "history"]
    from_turn: int | None = None
    """Index into `history` of the turn whose topic was carried."""
    carried: str = ""
    """The words that were carried in."""
    slugs: tuple[str, ...] = ()
    """Pages the carried turn answered with (a prior for ranking)."""


def _words(text: str) -> list[str]:
    return _SPLIT.findall(unicodedata.normalize("NFKC", text).casefold())


def resolve_topic(
    message: str,
    *,
    has_topic: Callable[[str], bool],
    history: Sequence[Turn] = (),
    screen: Screen | None = None,
) -> Topic:
    """`has_topic(word)` says whether a word names a page's subject (a word of a page title, not a verb)."""
    words = _words(message)
    own = [w for w in words if has_topic(w) and w not in _ANAPHORA and w not in _DEICTIC]
    points_at_screen = any(w in _DEICTIC for w in words)
    points_back = any(w in _ANAPHORA for w in words) or message.strip().casefold().startswith(_CONTINUATIONS)

    if screen is not None and points_at_screen and not own:
        terms = screen.terms()
        if terms:
            return Topic(query=_substitute(message, words, _DEICTIC, terms[0]), source="screen", carried=terms[0])
    if own:
        return Topic(query=message, source="message")
    if history and (points_back or not words or len([w for w in words if has_topic(w)]) == 0):
        carried = _latest_topic(history, has_topic)
        if carried is not None:
            index, topic_words, slugs = carried
            phrase = " ".join(topic_words)
            return Topic(
                query=_substitute(message, words, _ANAPHORA, phrase),
                source="history", from_turn=index, carried=phrase, slugs=slugs,
            )
    if screen is not None and not own:
        terms = screen.terms()
        if terms and points_at_screen:
            return Topic(query=_substitute(message, words, _DEICTIC, terms[0]), source="screen", carried=terms[0])
    return Topic(query=message, source="message")


def _latest_topic(history: Sequence[Turn], has_topic: Callable[[str], bool]) -> tuple[int, list[str], tuple[str, ...]] | None:
    """The newest user turn with a topic of its own, with the pages answered right after it."""
    for index in range(len(history) - 1, -1, -1):
        turn = history[index]
        if turn.role != "user":
            continue
        topic_words = [w for w in _words(turn.content) if has_topic(w) and w not in _ANAPHORA and w not in _DEICTIC]
        if not topic_words:
            continue
        answered = next((t for t in history[index + 1 :] if t.role == "assistant"), None)
        slugs = answered.doc_slugs if answered is not None else ()
        deduped = list(dict.fromkeys(topic_words))[:3]
        return index, deduped, slugs
    # No user turn had a topic; an assistant turn's pages still say what was discussed.
    for index in range(len(history) - 1, -1, -1):
        turn = history[index]
        if turn.role == "assistant" and turn.doc_slugs:
            words = _words(turn.doc_slugs[0].rsplit("/", 1)[-1].replace("-", " "))
            return index, words, turn.doc_slugs
    return None


def _substitute(message: str, words: list[str], pointers: set[str], phrase: str) -> str:
    """Replace the first pointer word ("it", "this") by the carried phrase, else append it."""
    for word in words:
        if word in pointers:
            pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
            replaced, count = pattern.subn(phrase, message, count=1)
            if count:
                return replaced
    return f"{message.rstrip(' ?.!')} {phrase}"
