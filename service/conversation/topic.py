"""Where a message's topic comes from: the message itself, the screen, or the conversation.

A message with a topic of its own ("how do I rename a workspace") is searched as it
is. A message without one ("and how do I resize it?", "how do I rename this") takes
its topic from the screen the user is on when it points at the screen ("this",
"here"), otherwise from the latest answered turn of the conversation.
"""

from __future__ import annotations

import itertools
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
# Words of a request that name no action: question words, pronouns, particles, light verbs.
_NOT_ACTIONS = {
    "how", "do", "does", "did", "can", "could", "would", "should", "will", "shall", "may", "might", "must",
    "i", "you", "we", "me", "my", "your", "our", "a", "an", "the", "to", "of", "in", "on", "at", "for", "from",
    "with", "by", "about", "into", "is", "are", "was", "were", "be", "been", "am", "and", "or", "also", "then",
    "what", "where", "when", "why", "which", "who", "please", "again", "afterwards", "afterward", "later", "now",
    "too", "just", "still", "so", "if", "as", "up", "out", "any", "some", "all", "get", "got", "go", "want",
    "need", "like", "have", "has", "had", "let", "way", "there", "possible", "able", "back", "not", "no",
}
# General English for an action the documentation names with one verb. Phrases are idioms, read
# as their verb whatever the corpus's words; single words only when the corpus never uses them.
_RESTORE = ("restore", "recover", "undelete", "undo")
_DELETE = ("delete", "remove", "erase")
_RENAME = ("rename",)
_IDIOMS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"\b(?:get|bring|have)\s+(it|them|that|this|those|these)\s+back\b", re.IGNORECASE), _RESTORE),
    (re.compile(r"\b(?:get|bring)\s+back\b", re.IGNORECASE), _RESTORE),
    (re.compile(r"\bget\s+rid\s+of\b", re.IGNORECASE), _DELETE),
    (re.compile(r"\bchange\s+the\s+name\s+of\b", re.IGNORECASE), _RENAME),
)
_SYNONYMS = {"recover": _RESTORE, "undelete": _RESTORE, "retrieve": _RESTORE, "erase": _DELETE}


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

    def element(self, kind: str) -> str | None:
        """The on-screen element "this <kind>" points at: the focused one, else the only one shown."""
        if self.focused and kind in _words(self.focused):
            return _term(self.focused)
        shown = {"widget": self.visible_widgets, "panel": self.open_panels}.get(kind, ())
        if len(shown) == 1:
            term = _term(shown[0])
            return term if kind in term.split() else f"{term} {kind}"
        return None

    def terms(self) -> list[str]:
        """The screen's words, most specific first (what the user is looking at)."""
        ordered = [self.focused, self.screen, *self.open_panels, *self.visible_widgets]
        seen: list[str] = []
        for value in ordered:
            if not value:
                continue
            words = _term(value)
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
    actions: tuple[str, ...] = ()
    """For a carried topic: stems of the action the message names ("restor", "delet")."""
    rewritten: str = ""
    """An idiom read as the corpus's verb ("get it back" → "restore"), for the trace."""


def _words(text: str) -> list[str]:
    return _SPLIT.findall(unicodedata.normalize("NFKC", text).casefold())


def topic_words(names: Sequence[str], stopwords: frozenset[str] = frozenset()) -> frozenset[str]:
    """Words that name a page's subject, from page titles, glossary terms and synonyms.

    Stopwords never do: a title phrased as a question ("How to create a new graph",
    "What is indentation and why does it matter?") would otherwise give every
    "how do I …" message a topic of its own, and no follow-up would ever carry one."""
    words = {w for name in names for w in _subject_words(name) if len(w) > 2 and w not in stopwords}
    # "widgets" names the Widgets page as much as "widget" does.
    return frozenset(words | {w[:-1] for w in words if w.endswith("s") and len(w) > 3} | {f"{w}s" for w in words})


def _subject_words(name: str) -> list[str]:
    """A name's words without the verb of a how-to title: "How to create a new graph" is about
    graphs; "create" names what the page shows you doing, as "how do I create one?" does."""
    words = _words(name)
    actions = {words[i + 2] for i in range(len(words) - 2) if words[i : i + 2] == ["how", "to"]}
    return [w for w in words if w not in actions]


def _term(value: str) -> str:
    """An identifier from the UI ("widget:quick_links") as words ("widget quick links")."""
    return " ".join(_words(value.replace("_", " ").replace("-", " ").replace(":", " ")))


def resolve_topic(
    message: str,
    *,
    has_topic: Callable[[str], bool],
    history: Sequence[Turn] = (),
    screen: Screen | None = None,
    foreign: Callable[[str], bool] = lambda word: False,
) -> Topic:
    """`has_topic(word)` says whether a word names a page's subject (a word of a page title, not a verb);
    `foreign(word)` whether the corpus never uses it (then the message is about something else,
    not a follow-up, unless it points back with "it", "that", "and …")."""
    words = _words(message)
    pointed = _pointed_element(words, screen)
    if pointed is not None:
        kind, element = pointed
        query = re.sub(rf"\b(this|that|current|focused|selected)\s+{kind}s?\b", element, message, count=1,
                       flags=re.IGNORECASE)
        return Topic(query=query, source="screen", carried=element)
    own = [w for w in words if has_topic(w) and w not in _ANAPHORA and w not in _DEICTIC]
    points_at_screen = any(w in _DEICTIC for w in words)
    points_back = any(w in _ANAPHORA for w in words) or message.strip().casefold().startswith(_CONTINUATIONS)

    if screen is not None and points_at_screen and not own:
        terms = screen.terms()
        if terms:
            return Topic(query=_substitute(message, words, _DEICTIC, terms[0]), source="screen", carried=terms[0])
    if own:
        return Topic(query=message, source="message")
    about_else = any(foreign(w) for w in words)
    if history and (points_back or not words or not about_else):
        carried = _latest_topic(history, has_topic)
        if carried is not None:
            index, topic_words, slugs = carried
            phrase = " ".join(topic_words)
            asked, rewritten = _read_idioms(_without_opener(message), lambda w: not foreign(w))
            actions = tuple(dict.fromkeys(
                stem for word, stem in zip(_words(asked), action_stems(asked), strict=True)
                if stem and not has_topic(word) and word not in _ANAPHORA and word not in _DEICTIC
                and word not in topic_words
            ))
            return Topic(
                query=_substitute(asked, _words(asked), _ANAPHORA, phrase),
                source="history", from_turn=index, carried=phrase, slugs=slugs, actions=actions,
                rewritten=rewritten,
            )
    if screen is not None and not own:
        terms = screen.terms()
        if terms and points_at_screen:
            return Topic(query=_substitute(message, words, _DEICTIC, terms[0]), source="screen", carried=terms[0])
    return Topic(query=message, source="message")


def action_stems(text: str) -> list[str]:
    """One stem per word of `text`, "" for a word that names no action: "Restoring a deleted
    workspace" → restor, "", delet, workspac. Suffixes off (-ing, -ed, -es, -s, -e) and a doubled
    final consonant undone, so "pinning", "pinned" and "pin" meet."""
    stems = []
    for word in _words(text):
        if word in _NOT_ACTIONS or len(word) < 3 or word.isdigit():
            stems.append("")
            continue
        stem = word
        for suffix in ("ing", "ed", "es", "s", "e"):
            if stem.endswith(suffix) and len(stem) - len(suffix) >= 3:
                stem = stem[: -len(suffix)]
                break
        if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiousl":
            stem = stem[:-1]
        stems.append(stem)
    return stems


def _read_idioms(message: str, known: Callable[[str], bool]) -> tuple[str, str]:
    """`message` with an idiom of an action ("get it back") or a word the corpus never uses
    ("recover") replaced by the corpus's verb for it (the first of the group it uses); and
    what was read, for the trace ("" when nothing was)."""
    for pattern, group in _IDIOMS:
        verb = next((v for v in group if known(v)), None)
        match = pattern.search(message)
        if verb is not None and match is not None:
            pointer = f" {match[1]}" if match.groups() and match[1] else ""
            return message[: match.start()] + verb + pointer + message[match.end() :], f"{match[0]!r} as {verb!r}"
    for word in _words(message):
        synonyms = _SYNONYMS.get(word)
        if synonyms is not None and not known(word):
            verb = next((v for v in synonyms if known(v)), None)
            if verb is not None:
                replaced = re.sub(rf"\b{word}\b", verb, message, count=1, flags=re.IGNORECASE)
                return replaced, f"{word!r} as {verb!r}"
    return message, ""


def _pointed_element(words: list[str], screen: Screen | None) -> tuple[str, str] | None:
    """("widget", "quick links widget") for "this widget" when the screen shows which one; any
    other kind ("this tool") when the focused element is one ("tool:eraser")."""
    if screen is None:
        return None
    for first, second in itertools.pairwise(words):
        kind = second[:-1] if second.endswith("s") else second
        if first in _DEICTIC | {"that"}:
            element = screen.element(kind)
            if element is not None:
                return kind, element
    return None


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
        asked = _question_answered_by_choice(history, index, topic_words, slugs, has_topic)
        if asked is not None:
            index, topic_words = asked
        deduped = list(dict.fromkeys(topic_words))[:3]
        return index, deduped, slugs
    # No user turn had a topic; an assistant turn's pages still say what was discussed.
    for index in range(len(history) - 1, -1, -1):
        turn = history[index]
        if turn.role == "assistant" and turn.doc_slugs:
            # A slug names the page in the plural ("actions/workspaces"); the question is about one.
            words = [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
                     for w in _words(turn.doc_slugs[0].rsplit("/", 1)[-1].replace("-", " "))]
            return index, words, turn.doc_slugs
    return None


def _question_answered_by_choice(
    history: Sequence[Turn], index: int, words: list[str], slugs: tuple[str, ...], has_topic: Callable[[str], bool]
) -> tuple[int, list[str]] | None:
    """A turn that only named the page offered by a clarification ("Note Actions") chose where the
    answer is, not what it is about: the topic is the question asked before it ("how do I create a note")."""
    if index < 2 or not slugs:
        return None
    asked, question = history[index - 1], history[index - 2]
    if asked.role != "assistant" or asked.doc_slugs or question.role != "user":
        return None
    page = {w.removesuffix("s") for w in _words(slugs[0].replace("-", " "))}
    if not all(w.removesuffix("s") in page for w in words):
        return None
    topic = [w for w in _words(question.content) if has_topic(w) and w not in _ANAPHORA and w not in _DEICTIC]
    return (index - 2, topic) if topic else None


def _without_opener(message: str) -> str:
    """"and how do I resize it?" → "how do I resize it?": a leading "and" would read as a second intent."""
    folded = message.lstrip().casefold()
    for opener in ("and ", "also ", "then ", "or "):
        if folded.startswith(opener) and len(folded) > len(opener):
            return message.lstrip()[len(opener):]
    return message


def _substitute(message: str, words: list[str], pointers: set[str], phrase: str) -> str:
    """Replace the first pointer word ("it", "this") by the carried phrase, else append it."""
    for word in words:
        if word in pointers:
            pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
            replaced, count = pattern.subn(phrase, message, count=1)
            if count:
                return replaced
    return f"{message.rstrip(' ?.!')} {phrase}"
