"""Pure: which curations match a query, and what they do to a decision.

- match `exact`: the query's normalised phrase equals the curation's;
  `contains`: the curation's phrase appears in it as whole consecutive tokens.
- `hide` removes the page from the evidence and the options. A clarification
  left with one option becomes that page's answer; an answer whose top page
  was hidden answers with the next page, or says it found nothing.
- `pin` puts the page (or its section) first and makes the decision an answer:
  an operator's pin is an explicit statement of the right answer.
Pins of pages the corpus no longer has are skipped (the admin list reports
them as stale), so a later seed can never make a curation fail a request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from service.decide import clarify
from service.domain.types import Answer, Base, Clarify, Decision, Evidence, NoMatch

Match = Literal["exact", "contains"]
Action = Literal["pin", "hide"]


class Curation(Base, frozen=True):
    id: int
    match: Match
    phrase: str
    query: str
    action: Action
    doc_slug: str
    created_by: str
    created_at: str
    header_path: str | None = None
    note: str | None = None

    def matches(self, phrase: str) -> bool:
        if self.match == "exact":
            return phrase == self.phrase
        return f" {self.phrase} " in f" {phrase} "

    def describe(self) -> str:
        target = self.doc_slug + (f" > {self.header_path}" if self.header_path else "")
        return f"curation #{self.id} ({self.action} {target} for {self.match} '{self.phrase}') by {self.created_by}"


EvidenceFor = Callable[[str, str | None, float], Evidence | None]
"""(slug, header path, score) → evidence for a pinned page; None when it is gone."""


def matching(curations: Sequence[Curation], phrase: str) -> list[Curation]:
    return [c for c in curations if c.matches(phrase)]


def apply(decision: Decision, found: Sequence[Curation], evidence_for: EvidenceFor) -> tuple[Decision, list[Curation]]:
    """The decision after the matching curations, and those that changed something."""
    applied: list[Curation] = []
    for cur in (c for c in found if c.action == "hide"):
        after = _hide(decision, cur.doc_slug)
        if after is not decision:
            applied.append(cur)
            decision = after
    pins = [c for c in found if c.action == "pin"]
    for cur in reversed(pins):  # the oldest pin ends up first
        after = _pin(decision, cur, evidence_for)
        if after is not decision:
            applied.append(cur)
            decision = after
    return decision, applied


def _hide(decision: Decision, slug: str) -> Decision:
    results = tuple(e for e in decision.results if e.doc_slug != slug)
    options = tuple(o for o in decision.options if o.doc_slug != slug)
    if len(results) == len(decision.results) and len(options) == len(decision.options):
        return decision
    reason = f"curated: hid {slug}"
    match decision:
        case Answer():
            if not results:
                return NoMatch(message=clarify.NO_MATCH, reason=reason)
            return Answer(results=results, confidence=decision.confidence, reason=reason,
                          message=decision.message if len(options) > 1 else "",
                          options=options if len(options) > 1 else ())
        case Clarify():
            if len(options) == 1:
                top = tuple(e for e in results if e.doc_slug == options[0].doc_slug) or results
                return Answer(results=top + tuple(e for e in results if e not in top),
                              confidence=decision.confidence, reason=reason)
            if not options:
                return NoMatch(message=clarify.NO_MATCH, reason=reason)
            first = [next((e for e in results if e.doc_slug == o.doc_slug), None) for o in options[:2]]
            message = decision.message
            if first[0] is not None and first[1] is not None:
                message = clarify.ambiguous(first[0], first[1])
            return Clarify(results=results, confidence=decision.confidence, options=options, reason=reason,
                           message=message)
        case NoMatch():
            return NoMatch(message=decision.message, reason=decision.reason, results=results)


def _pin(decision: Decision, cur: Curation, evidence_for: EvidenceFor) -> Decision:
    top_score = max((e.score for e in decision.results), default=1.0)
    pinned = next((e for e in decision.results if e.doc_slug == cur.doc_slug
                   and (cur.header_path is None or e.header_path == cur.header_path)), None)
    if pinned is None:
        pinned = evidence_for(cur.doc_slug, cur.header_path, top_score)
        if pinned is None:
            return decision  # the page is gone: stale, reported by the admin list
    if isinstance(decision, Answer) and decision.results and decision.results[0] == pinned \
            and not decision.options:
        return decision
    rest = tuple(e for e in decision.results if e != pinned)
    # An operator's pin is the answer: full confidence, no question asked.
    return Answer(results=(pinned, *rest), confidence=1.0, reason="curated: pinned")
