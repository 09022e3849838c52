"""The UI's clarification and no-match texts (seed plan templates, verbatim)."""

from __future__ import annotations

from service.domain.types import Evidence

WEAK = "I'm not sure which feature you mean. Are you asking about {top_a}? If not, tell me the feature name."
AMBIGUOUS = "Do you mean {top_a} ({category_a}) or {top_b} ({category_b})?"
NO_MATCH = "Which part should I explain?"
SINGLE_LOW_CONFIDENCE = "I think you mean {top_a}. Is that right?"
MULTI_INTENT = "Which one should I go deeper on?"
GENERIC = (
    "I can't look that up in the documentation right now. "
    "Which part should I explain: Home, workspaces, notes or widgets?"
)


def weak(top: Evidence) -> str:
    return WEAK.format(top_a=top.title)


def ambiguous(top: Evidence, second: Evidence) -> str:
    return AMBIGUOUS.format(
        top_a=top.title, category_a=top.category, top_b=second.title, category_b=second.category
    )


def single_low_confidence(top: Evidence) -> str:
    return SINGLE_LOW_CONFIDENCE.format(top_a=top.title)
