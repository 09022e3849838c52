"""What a user's reply to a clarification chooses.

A reply picks an offered page by its title, slug, category, an ordinal, or yes /
no to a single-page confirmation. A reply that names none of the offered pages
and carries words of its own is a new question.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

from service.conversation.clarification import Clarification, ClarificationOption

ReplyKind = Literal["chosen", "declined", "new_question"]

_ORDINALS: dict[str, int] = {
    "1": 0, "one": 0, "first": 0, "1st": 0,
    "2": 1, "two": 1, "second": 1, "2nd": 1,
    "3": 2, "three": 2, "third": 2, "3rd": 2,
    "4": 3, "four": 3, "fourth": 3, "4th": 3,
    "5": 4, "five": 4, "fifth": 4, "5th": 4,
}
_LAST = {"last", "latter", "bottom"}
_FORMER = {"former", "top"}
_YES = {
    "yes", "y", "yeah", "yep", "yup", "sure", "correct", "right", "exactly", "ok", "okay",
    "indeed", "affirmative", "absolutely", "definitely", "thats it", "that one", "this one",
    "yes please", "that s right", "thats right", "that is right", "yes that one",
}
_NO = {
    "no", "n", "nope", "nah", "not that", "neither", "none", "wrong", "not really",
    "no thanks", "not that one", "none of them", "neither of them", "no neither",
}
# Words that turn a reply down ("no, not those", "none of these", "neither one")...
_NEGATIONS = {"no", "n", "nope", "nah", "not", "neither", "none", "nor", "wrong", "nothing", "never"}
# ...and the words such a reply may carry besides them without asking anything else.
_DECLINE_FILLER = {
    "those", "these", "them", "either", "any", "of", "one", "ones", "it", "that", "this", "is", "isn", "t",
    "s", "the", "a", "thanks", "thank", "you", "really", "please", "sorry", "i", "dont", "don", "want",
    "mean", "meant", "was", "looking", "for", "what", "quite", "at", "all", "options", "option", "page",
    "pages", "right", "correct", "sure", "but", "still", "just",
}
# Words a reply may carry around its choice without turning into a new question.
_FILLER = {
    "the", "a", "an", "one", "ones", "option", "page", "please", "i", "mean", "meant", "want",
    "about", "on", "it", "is", "its", "s", "that", "this", "thanks", "thank", "you", "go", "with",
    "number", "no", "yes", "of", "them", "pick", "choose", "take", "like", "id", "would", "doc",
    "docs", "article", "section", "for", "me", "just", "oh", "um", "hmm", "ah", "sorry", "let",
    "lets", "show", "explain", "tell", "more", "in", "to", "and", "which", "was", "asking",
}
# Words that make a reply a question of its own ("how do I ...", "what about ...").
_QUESTION_WORDS = {"how", "what", "where", "why", "when", "can", "could", "does", "do", "is", "should"}


@dataclass(frozen=True)
class Reply:
    kind: ReplyKind
    option: ClarificationOption | None = None
    """The chosen page (kind "chosen")."""
    remaining: tuple[ClarificationOption, ...] = ()
    """For "declined": the options still on offer (the next one to suggest first)."""
    how: str = ""
    """What matched, for the evidence ("ordinal 2", "title 'Home'", "yes")."""


def _words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.findall(r"[a-z0-9]+", folded)


def _phrase(text: str) -> str:
    return " ".join(_words(text))


def _slug_words(option: ClarificationOption) -> set[str]:
    return set(_words(option.doc_slug))


def resolve(text: str, clarification: Clarification) -> Reply:
    """Read `text` as the user's answer to `clarification`."""
    options = clarification.options
    phrase = _phrase(text)
    words = phrase.split()
    if not words:
        return Reply(kind="new_question")

    # The slug itself ("concepts/home"), or the title exactly.
    for option in options:
        if text.strip().casefold() == option.doc_slug.casefold() or phrase == _phrase(option.doc_slug):
            return Reply(kind="chosen", option=option, how=f"slug '{option.doc_slug}'")
    for option in options:
        if phrase == _phrase(option.title):
            return Reply(kind="chosen", option=option, how=f"title '{option.title}'")

    # Yes / no to a confirmation of one page.
    declined = _is_decline(words)
    if clarification.kind in ("confirm", "weak") or len(options) == 1:
        if phrase in _YES or (words[0] in _YES and set(words[1:]) <= _FILLER | _YES):
            return Reply(kind="chosen", option=options[0], how="yes")
        if declined:
            return Reply(kind="declined", remaining=options[1:], how="no")
    elif declined:
        # Every option was on offer at once: nothing is left to offer.
        return Reply(kind="declined", remaining=(), how="none of them")

    # An ordinal: "2", "the second one", "first", "the last one".
    content = [w for w in words if w not in _FILLER]
    ordinal = _ordinal(words, len(options))
    if ordinal is not None and all(w in _ORDINALS or w in _LAST or w in _FORMER for w in content):
        return Reply(kind="chosen", option=options[ordinal], how=f"ordinal {ordinal + 1}")

    # A category word ("the widgets one") when only one option is of that category.
    by_category = [o for o in options if content and " ".join(content) in (_phrase(o.category), _singular(_phrase(o.category)))]
    if len(by_category) == 1:
        return Reply(kind="chosen", option=by_category[0], how=f"category '{by_category[0].category}'")

    # A title, slug or category named inside the reply ("the dashboard one").
    named = _named_options(words, options)
    leftover = [w for w in content if not any(w in _option_words(o) for o in options)]
    if len(named) == 1 and _is_choice(words, leftover):
        option = named[0]
        return Reply(kind="chosen", option=option, how=f"named '{option.title}'")

    # Close spelling of one title ("dashbord").
    if not leftover or len(content) <= 2:
        scored = sorted(
            ((fuzz.ratio(" ".join(content) or phrase, _phrase(o.title)), o) for o in options),
            key=lambda pair: -pair[0],
        )
        if scored and scored[0][0] >= 85 and (len(scored) == 1 or scored[1][0] < scored[0][0] - 5):
            return Reply(kind="chosen", option=scored[0][1], how=f"spelling of '{scored[0][1].title}'")
    return Reply(kind="new_question")


def _is_decline(words: list[str]) -> bool:
    """A "no" in any of its usual forms, naming nothing else: "no", "nope, neither", "no, not those",
    "none of these", "neither one". Read as a question instead, it would search its filler words
    and walk into pages nobody asked about."""
    phrase = " ".join(words)
    if phrase in _NO:
        return True
    return any(w in _NEGATIONS for w in words) and all(w in _NEGATIONS or w in _DECLINE_FILLER or w in _NO
                                                       for w in words)


def _ordinal(words: list[str], count: int) -> int | None:
    for word in words:
        if word in _ORDINALS and _ORDINALS[word] < count:
            return _ORDINALS[word]
        if word in _LAST:
            return count - 1
        if word in _FORMER:
            return 0
    return None


def _option_words(option: ClarificationOption) -> set[str]:
    return set(_words(option.title)) | set(_words(option.category)) | _slug_words(option) | {
        _singular(w) for w in _words(option.title)
    }


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _named_options(words: list[str], options: tuple[ClarificationOption, ...]) -> list[ClarificationOption]:
    """Options whose distinctive words the reply uses (words every option shares don't tell them apart)."""
    reply = {w for w in words} | {_singular(w) for w in words}
    shared = set.intersection(*(_option_words(o) for o in options)) if len(options) > 1 else set()
    named: list[ClarificationOption] = []
    distinctive: dict[str, set[str]] = {}
    for option in options:
        distinctive[option.doc_slug] = _option_words(option) - shared - _FILLER
        if distinctive[option.doc_slug] & reply:
            named.append(option)
    if len(named) > 1:
        # Prefer the option whose whole title is in the reply ("widget manager" over "widgets").
        whole = [o for o in named if _phrase(o.title) in " ".join(words)]
        if len(whole) == 1:
            return whole
        # Then the one the reply names most of, and on a tie the one it names all that sets apart:
        # "the left one" is Left sidebar, "the left-hand one" How to work with the left-hand sidebar.
        hits = {o.doc_slug: len(distinctive[o.doc_slug] & reply) for o in named}
        best = [o for o in named if hits[o.doc_slug] == max(hits.values())]
        if len(best) > 1:
            best = [o for o in best if distinctive[o.doc_slug] <= reply]
        if len(best) == 1:
            return best
    return named


def _is_choice(words: list[str], leftover: list[str]) -> bool:
    """A reply that names a page is a choice unless it is a question about something else."""
    if not leftover:
        return True
    if words[0] in _QUESTION_WORDS and len(leftover) >= 2:
        return False
    return len(leftover) <= 1
