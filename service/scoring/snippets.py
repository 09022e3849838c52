"""Snippets: a window of a unit's plain text around the first matched term.

The plain text is the parser's (`service.ingest.parse.plain_text`: the page's
one token stream, tool-specific markup cleaned), made once per unit at index
time; it is cached by content, so a semantic hit's snippet at query time
(scoring/hybrid.py) reuses the index's parse instead of parsing again.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from service.ingest import parse

__all__ = ["SNIPPET_CHARS", "make_snippet", "plain_text"]

SNIPPET_CHARS = 240
PLAIN_TEXT_CACHE = 4096
"""Units' contents (~1 KB each with their plain text): a few MB at most."""


@lru_cache(maxsize=PLAIN_TEXT_CACHE)
def plain_text(markdown: str) -> str:
    """A unit's Markdown as the words a reader sees (see `parse.plain_text`)."""
    return parse.plain_text(markdown)


def _first_word_start(lowered: str, term: str) -> int | None:
    """Index of the first occurrence of `term` that starts a word (plain `find`, no regex)."""
    at = lowered.find(term)
    while at != -1:
        if at == 0 or not lowered[at - 1].isalnum():
            return at
        at = lowered.find(term, at + 1)
    return None


def _head(text: str) -> str:
    """The text's opening, cut at a word boundary."""
    if len(text) <= SNIPPET_CHARS:
        return text
    return text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"


def make_snippet(text: str, terms: Sequence[str], fallback: str = "", lowered: str | None = None) -> str:
    """A window of plain text around the first matched term, cut at word boundaries;
    with no term in it, its opening (`fallback`, the page summary, only when a term is
    in the summary or the text is empty).

    `lowered` is `text.lower()` when the caller has it already (units keep it).
    """
    lowered = text.lower() if lowered is None else lowered
    positions = [p for t in terms if (p := _first_word_start(lowered, t)) is not None]
    if not positions:
        # The matched unit's own text, never the page summary unless a term is in it
        # (the words matched a title or keyword) or the unit has no text at all.
        summary_lower = fallback.lower()
        if fallback and any(_first_word_start(summary_lower, t) is not None for t in terms):
            return fallback
        return _head(text) or fallback
    start = max(0, min(positions) - SNIPPET_CHARS // 3)
    if start:
        start = text.find(" ", start) + 1
    window = text[start : start + SNIPPET_CHARS]
    if start + SNIPPET_CHARS < len(text):
        window = window.rsplit(" ", 1)[0] + " …"
    return ("… " if start else "") + window
