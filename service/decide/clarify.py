"""The UI's clarification and no-match texts (seed plan templates, verbatim)."""

from __future__ import annotations

from collections.abc import Sequence

from service.domain.types import Evidence

WEAK = "I'm not sure which feature you mean. Are you asking about {top_a}? If not, tell me the feature name."
AMBIGUOUS = "Do you mean {top_a} ({category_a}) or {top_b} ({category_b})?"
# The seed plan's question with a third contender (not a seed template: its two-page form, extended).
AMBIGUOUS_THREE = "Do you mean {top_a} ({category_a}), {top_b} ({category_b}) or {top_c} ({category_c})?"
# A no match never ends in a question it offers nothing to answer (issue 40): it says so, and
# offers the closest pages when the ranking has some.
NO_MATCH = "I couldn't find that in the documentation."
NO_MATCH_LEAD = "I couldn't find a page that answers that."
CLOSEST = "The closest matches are {pages}."
SINGLE_LOW_CONFIDENCE = "I think you mean {top_a}. Is that right?"
MULTI_INTENT = "Which one should I go deeper on?"
# Two needs p would not answer: the message's two pages, asked about (issue 40 item 4).
TWO_NEEDS = "You asked about two things: {top_a} ({category_a}) and {top_b} ({category_b}). Which one first?"
# Small talk gets a reply of its own (status no_match, reason small_talk), never a page.
SMALL_TALK = {
    "greeting": "Hello! Ask me about anything in the documentation and I'll find the page that explains it.",
    "thanks": "You're welcome. Is there anything else I can look up for you?",
}
# Served when retrieval is off or every tier failed, on whatever corpus is served: it names no
# page or product area (the seed plan's listed the seed app's "Home, workspaces, notes or
# widgets") and asks nothing it offers no answer to (issue 40).
GENERIC = "I can't look that up in the documentation right now. Please try again in a moment."


def weak(top: Evidence) -> str:
    return WEAK.format(top_a=top.title)


def ambiguous(top: Evidence, second: Evidence, third: Evidence | None = None) -> str:
    if third is not None:
        return AMBIGUOUS_THREE.format(
            top_a=top.title, category_a=top.category, top_b=second.title, category_b=second.category,
            top_c=third.title, category_c=third.category,
        )
    return AMBIGUOUS.format(
        top_a=top.title, category_a=top.category, top_b=second.title, category_b=second.category
    )


def closest_matches(pages: Sequence[Evidence], lead: str = NO_MATCH_LEAD) -> str:
    """The no-match reply that says `lead` and offers `pages` (the ranking's best, at least one)."""
    named = [f"{e.title} ({e.category})" for e in pages]
    listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
    return f"{lead} {CLOSEST.format(pages=listed)}"


def two_needs(first: Evidence, second: Evidence) -> str:
    return TWO_NEEDS.format(top_a=first.title, category_a=first.category, top_b=second.title,
                            category_b=second.category)
