"""The conversation stage: what a message means given the turns before it and the screen.

Runs before normalisation (`resolve`: the text to search) and once more after the
tiers, before the response (`settle`: a chosen page, a declined suggestion, or a
near-tie the screen or the conversation breaks). Pure: the pipeline hands in the
corpus facts it needs as functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from service.conversation.clarification import Clarification, ClarificationKind, ClarificationOption
from service.conversation.replies import resolve as resolve_reply
from service.conversation.topic import Screen, Turn, action_stems, resolve_topic
from service.domain.conversation import ConversationTrace
from service.domain.types import Answer, Clarify, Decision, Evidence, NoMatch, Option

MAX_TURNS = 10
"""Turns of `history` a request may send (the contract's bound)."""


@dataclass(frozen=True)
class Conversation:
    """The conversation fields of one request (validated; `reply_to` verified)."""

    history: tuple[Turn, ...] = ()
    screen: Screen | None = None
    reply_to: Clarification | None = None


@dataclass(frozen=True)
class Resolution:
    """What to search, and what to do with the tiers' decision afterwards."""

    query: str
    trace: ConversationTrace
    chosen: ClarificationOption | None = None
    """The page a reply picked: the answer is its best passage for `query` (the original question)."""
    declined: tuple[ClarificationOption, ...] | None = None
    """After "no": the options still on offer (empty: none left)."""
    prior: tuple[str, ...] = ()
    """Pages the conversation was about: a clarification between them and others picks them."""
    screen: Screen | None = None
    notes: list[str] = field(default_factory=list)
    actions: tuple[str, ...] = ()
    """Stems of what a follow-up asks to do with the carried topic ("restor" for "can I get it
    back?"): the carried pages' sections that name it answer first."""


NOTHING_BETTER = "I have nothing better to suggest. Tell me the name of the feature or page and I will look again."
"""After the user turned down every page on offer (issue 35: say so, rather than walk on)."""


@dataclass(frozen=True)
class Texts:
    """The UI's texts (they live with the decision layer, service/decide/clarify.py)."""

    no_match: str
    suggest: Callable[[str], str]
    """A page title → "I think you mean <title>. Is that right?"."""
    choose: Callable[[Sequence[Option]], str]
    """The pages still on offer after a "no", asked about once, all together."""
    nothing_better: str = NOTHING_BETTER


TopicWords = Callable[[str], bool]
EvidenceOnPage = Callable[[str], Evidence | None]
"""slug → that page's best passage for the searched query (None: the page is gone)."""


def resolve(text: str, conversation: Conversation, *, has_topic: TopicWords, foreign: TopicWords) -> Resolution:
    """The query to search for `text`, given the conversation."""
    reply_to = conversation.reply_to
    if reply_to is not None:
        reply = resolve_reply(text, reply_to)
        if reply.kind == "chosen" and reply.option is not None:
            note = f"reply to the clarification of {reply_to.query!r}: {reply.how} chose {reply.option.doc_slug}"
            trace = ConversationTrace(query=reply_to.query, topic="reply", reply=reply.how,
                                      chosen=reply.option.doc_slug, notes=(note,))
            return Resolution(query=reply_to.query, trace=trace, chosen=reply.option)
        if reply.kind == "declined":
            left = ", ".join(o.doc_slug for o in reply.remaining) or "none"
            note = f"reply to the clarification of {reply_to.query!r}: declined; still on offer: {left}"
            trace = ConversationTrace(query=reply_to.query, topic="reply", reply=reply.how, notes=(note,))
            return Resolution(query=reply_to.query, trace=trace, declined=reply.remaining)
    topic = resolve_topic(
        text, has_topic=has_topic, history=conversation.history, screen=conversation.screen, foreign=foreign,
    )
    notes: list[str] = []
    if reply_to is not None:
        notes.append(f"reply to the clarification of {reply_to.query!r} names none of its options: a new question")
    if topic.rewritten:
        notes.append(f"read {topic.rewritten}")
    if topic.source == "history" and topic.from_turn is not None:
        notes.append(f"topic {topic.carried!r} carried from turn {topic.from_turn}: searched {topic.query!r}")
    elif topic.source == "screen":
        notes.append(f"'this' read as the screen's {topic.carried!r}: searched {topic.query!r}")
    trace = ConversationTrace(
        query=topic.query, topic=topic.source, from_turn=topic.from_turn, carried=topic.carried,
        screen=topic.carried if topic.source == "screen" else None,
        reply="new question" if reply_to is not None else None, notes=tuple(notes),
    )
    # A carried topic's pages break a later tie; a message of its own has no prior but the screen.
    prior = topic.slugs if topic.source == "history" else ()
    return Resolution(query=topic.query, trace=trace, prior=prior, screen=conversation.screen, actions=topic.actions)


def settle(
    decision: Decision, resolution: Resolution, evidence_on_page: EvidenceOnPage, texts: Texts
) -> tuple[Decision, Resolution]:
    """The decision after the conversation's say: a reply's page, a declined one, or a broken tie."""
    if resolution.chosen is not None:
        return _answer_with(resolution.chosen.doc_slug, decision, evidence_on_page, "reply: the user chose it",
                            resolution, texts)
    if resolution.declined is not None:
        return _after_no(decision, resolution, evidence_on_page, texts), resolution
    within = _within_topic(decision, resolution, evidence_on_page)
    if within is not None:
        evidence, why = within
        trace = resolution.trace
        resolved = dataclasses.replace(resolution, trace=msgspec.structs.replace(
            trace, chosen=evidence.doc_slug, notes=(*trace.notes, why)))
        same_page = tuple(e for e in decision.results if e.doc_slug == evidence.doc_slug and e != evidence)
        return Answer(results=(evidence, *same_page), confidence=1.0, reason="follow-up: within the carried topic"), \
            resolved
    if isinstance(decision, Clarify) and len(decision.options) > 1:
        pick = _tie_breaker(decision.options, resolution)
        if pick is not None:
            option, why, term = pick
            trace = resolution.trace
            screen = term or trace.screen
            note = f"near-tie between {', '.join(o.doc_slug for o in decision.options)} broken by the {why}"
            resolved = Resolution(
                query=resolution.query, prior=resolution.prior, screen=resolution.screen,
                trace=ConversationTrace(
                    query=trace.query, topic=trace.topic, from_turn=trace.from_turn, carried=trace.carried,
                    screen=screen, reply=trace.reply, chosen=option.doc_slug, notes=(*trace.notes, note),
                ),
            )
            return _answer_with(option.doc_slug, decision, evidence_on_page, f"tie broken by the {why}", resolved,
                                texts)
    return decision, resolution


def _answer_with(
    slug: str, decision: Decision, evidence_on_page: EvidenceOnPage, reason: str, resolution: Resolution,
    texts: Texts,
) -> tuple[Decision, Resolution]:
    best = evidence_on_page(slug)
    if best is None:
        return NoMatch(message=texts.no_match, reason=f"{reason}, but {slug} is no longer in the corpus"), resolution
    same_page = tuple(e for e in decision.results if e.doc_slug == slug and e != best)
    # The user (or the screen) settled which page: no question left to ask.
    return Answer(results=(best, *same_page), confidence=1.0, reason=reason), resolution


def _after_no(decision: Decision, resolution: Resolution, evidence_on_page: EvidenceOnPage, texts: Texts) -> Decision:
    """The pages the clarification held besides the one turned down, offered once, all together
    (one: "I think you mean X", several: "Do you mean X or Y?"); a "no" to that offer, or to a
    question that offered every page at once, gets "nothing better": never a walk from page to
    page, nor a search of the reply's words."""
    remaining = resolution.declined or ()
    if not remaining:
        return NoMatch(message=texts.nothing_better, reason="reply: declined every option")
    options = tuple(Option(doc_slug=o.doc_slug, title=o.title, category=o.category) for o in remaining)
    results = tuple(e for e in (evidence_on_page(o.doc_slug) for o in remaining) if e is not None)
    message = texts.suggest(options[0].title) if len(options) == 1 else texts.choose(options)
    return Clarify(results=results, confidence=decision.confidence, message=message, options=options,
                   reason="reply: declined, the remaining options")


def _within_topic(
    decision: Decision, resolution: Resolution, evidence_on_page: EvidenceOnPage
) -> tuple[Evidence, str] | None:
    """A follow-up naming an action on the carried topic ("can I get it back?", "and delete it?")
    is answered from the carried turn's pages first: the first of them with a section whose heading
    names the action (its passage among the tiers' results, else the page's best one for the
    question). None when no carried page has such a section: the tiers' decision stands."""
    if not resolution.actions or not resolution.prior:
        return None
    for slug in resolution.prior:
        passages = [e for e in decision.results if e.doc_slug == slug]
        best = evidence_on_page(slug)
        if best is not None and best not in passages:
            passages.append(best)
        # A section whose heading starts with the action ("Deleting a workspace") before one that
        # only mentions it ("Restoring a deleted workspace"); the tiers' order among equals.
        scored = [(_names_action(p, resolution.actions), -at, p) for at, p in enumerate(passages)]
        named = max(scored, key=lambda item: item[:2], default=None)
        if named is None or named[0] == 0:
            continue
        passage = named[2]
        top = decision.results[0] if decision.results else None
        if isinstance(decision, Answer) and top is not None and top.doc_slug == slug \
                and top.header_path == passage.header_path:
            return None  # the tiers answered with that very section already
        heading = (passage.header_path or "").rsplit(" > ", 1)[-1]
        return passage, f"within the carried topic first: {slug} › {heading} names the action"
    return None


def _names_action(passage: Evidence, actions: tuple[str, ...]) -> int:
    """2: the passage's heading starts with one of `actions`; 1: it names one; 0: neither."""
    stems = [s for s in action_stems((passage.header_path or "").rsplit(" > ", 1)[-1]) if s]
    if not stems or not set(stems) & set(actions):
        return 0
    return 2 if stems[0] in actions else 1


def _tie_breaker(options: tuple[Option, ...], resolution: Resolution) -> tuple[Option, str, str | None] | None:
    """The one option the conversation's pages or the screen point at, or None."""
    prior = [o for o in options if o.doc_slug in resolution.prior]
    if len(prior) == 1:
        return prior[0], f"topic of turn {resolution.trace.from_turn}", None
    if prior and resolution.prior[0] in {o.doc_slug for o in prior}:
        # Several were on the page list; the page the carried turn answered with first wins.
        first = next(o for o in prior if o.doc_slug == resolution.prior[0])
        return first, f"topic of turn {resolution.trace.from_turn}", None
    screen = resolution.screen
    if screen is None:
        return None
    for term in screen.terms():  # most specific first: focused, screen, panels, widgets
        words = set(term.split())
        named = [o for o in options if words & _option_words(o)]
        if len(named) == 1:
            return named[0], f"screen {term!r}", term
    return None


def _option_words(option: Option) -> set[str]:
    words = set(option.title.casefold().split()) | set(option.doc_slug.rsplit("/", 1)[-1].split("-"))
    return words | {w[:-1] for w in words if w.endswith("s") and len(w) > 3}


def clarification_kind(decision: Clarify) -> ClarificationKind:
    """How a reply reads: pick one of several, or yes / no to one suggestion."""
    if decision.message.startswith("I'm not sure"):
        return "weak"
    return "confirm" if len(decision.options) == 1 or decision.message.startswith("I think you mean") else "choose"


def options_of(decision: Clarify) -> tuple[ClarificationOption, ...]:
    return tuple(ClarificationOption(doc_slug=o.doc_slug, title=o.title, category=o.category)
                 for o in decision.options)
