"""Where a text may be cut without cutting a sentence or a Markdown block.

The pieces come from the parser's token stream (`service.ingest.parse.units`):
a top-level paragraph may be cut between sentences (never after a known
abbreviation such as "e.g."), a list item only after its own text together with
its marker (a numbered step never loses its text), tables, code blocks and
quotes only at their ends, and a text never ends on a heading.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable

from service.ingest.parse import units


def cut_points(text: str) -> list[int]:
    """Ascending offsets at which `text[:offset]` ends on a whole sentence or block."""
    return sorted({u.end for u in units(text) if not u.heading and text[: u.end].strip()})


def longest_fitting_prefix(text: str, fits: Callable[[str], bool]) -> str | None:
    """The longest whole-sentence prefix of `text` for which `fits` holds, or None.

    Binary search over the cut points: `fits` must be monotone (a shorter text
    never fits worse), which token counts are.
    """
    prefixes = [text[:p].rstrip() for p in cut_points(text)]
    low, high, best = 0, len(prefixes) - 1, None
    while low <= high:
        middle = (low + high) // 2
        if fits(prefixes[middle]):
            best, low = prefixes[middle], middle + 1
        else:
            high = middle - 1
    return best


ELLIPSIS = "…"
_WORD_END = re.compile(r"\S+")


def word_prefix(text: str, words: int) -> str:
    """The first `words` words of `text` as written (line breaks kept), with an ellipsis when
    that leaves any out."""
    ends = [m.end() for m in _WORD_END.finditer(text)]
    if len(ends) <= words:
        return text.rstrip()
    return _cut(text, ends[words - 1])


def longest_fitting_words(text: str, fits: Callable[[str], bool]) -> str | None:
    """The longest prefix of whole words of `text`, ending in an ellipsis, for which `fits`
    holds, or None: the last resort when not even the first sentence fits (a cut inside a
    sentence says so with the ellipsis). Binary search: `fits` must be monotone."""
    ends = [m.end() for m in _WORD_END.finditer(text)][:-1]  # the whole text is not a cut
    low, high, best = 0, len(ends) - 1, None
    while low <= high:
        middle = (low + high) // 2
        candidate = _cut(text, ends[middle])
        if fits(candidate):
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best


def _cut(text: str, end: int) -> str:
    return text[:end].rstrip(" ,;:-–—") + ELLIPSIS


def head(text: str, max_chars: int) -> str:
    """The longest prefix of whole pieces of at most `max_chars` characters ("" if none)."""
    best = ""
    for point in cut_points(text):
        prefix = text[:point].rstrip()
        if len(prefix) > max_chars:
            break
        best = prefix
    return best


def tail(text: str, max_chars: int) -> str:
    """The longest suffix of whole pieces of at most `max_chars` characters ("" if none)."""
    for unit in units(text):
        # A suffix starting inside a nested list keeps its items, dedented.
        suffix = textwrap.dedent(" " * _indent(text, unit.start) + text[unit.start :]).strip()
        if len(suffix) <= max_chars:
            return suffix
    return ""


def _indent(text: str, offset: int) -> int:
    """Columns of whitespace before `offset` on its line (so dedent sees the first line's)."""
    line_start = text.rfind("\n", 0, offset) + 1
    before = text[line_start:offset]
    return len(before) if not before.strip() else 0
