"""The UI's clarification and no-match texts (seed plan templates, verbatim)."""

from __future__ import annotations

from collections.abc import Sequence

from service.domain.types import Evidence, Option

WEAK = "I'm not sure which feature you mean. Are you asking about {top_a}? If not, tell me the feature name."
# The seed plan's "Do you mean {top_a} ({category_a}) or {top_b} ({category_b})?", for two or three
# pages, is `ambiguous`: a category is named only where it tells the pages apart (`named`).
# A no match never ends in a question it offers nothing to answer (issue 40): it says so, and
# offers the closest pages when the ranking has some.
NO_MATCH = "I couldn't find that in the documentation."
NO_MATCH_LEAD = "I couldn't find a page that answers that."
CLOSEST = "The closest matches are {pages}."
SINGLE_LOW_CONFIDENCE = "I think you mean {top_a}. Is that right?"
MULTI_INTENT = "Which one should I go deeper on?"
# Two needs p would not answer: the message's two pages, asked about (issue 40 item 4).
TWO_NEEDS = "You asked about two things: {top_a} and {top_b}. Which one first?"
"""Each page `named`: "Quick Links (widgets)" where the two pages' categories differ."""
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


def named(pages: Sequence[Evidence | Option]) -> list[str]:
    """Each page as a question names it: its title, with its category in brackets when the
    categories tell the pages apart ("Quick Links (widgets)", "Notes (concepts)"). One category
    shared by every page, such as the `general` of a corpus without folders, is not repeated
    after each: it tells the user nothing about which to pick."""
    if len({page.category for page in pages}) > 1:
        return [f"{page.title} ({page.category})" for page in pages]
    return [page.title for page in pages]


def ambiguous(top: Evidence, second: Evidence, third: Evidence | None = None) -> str:
    """The seed plan's "Do you mean A or B?", with a third page when there is one (`choose`:
    categories named only where they tell the pages apart)."""
    return choose([top, second] if third is None else [top, second, third])


def choose(pages: Sequence[Evidence | Option]) -> str:
    """"Do you mean A, B or C?" over two or more pages (each as `named` gives it)."""
    names = named(pages)
    return f"Do you mean {', '.join(names[:-1])} or {names[-1]}?"


def closest_matches(pages: Sequence[Evidence], lead: str = NO_MATCH_LEAD) -> str:
    """The no-match reply that says `lead` and offers `pages` (the ranking's best, at least one)."""
    names = named(pages)
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{lead} {CLOSEST.format(pages=listed)}"


def two_needs(first: Evidence, second: Evidence) -> str:
    a, b = named([first, second])
    return TWO_NEEDS.format(top_a=a, top_b=b)
