"""Where a text may be cut without cutting a sentence, and cutting it to fit.

A cut may fall at the end of a sentence (`.`, `!` or `?`, optionally closed by
a quote, bracket or Markdown emphasis, followed by the start of a new
sentence), at the end of a Markdown block line (a list item, heading or table
row, or a line followed by a blank line or a new block), or at the end of the
text. Never inside a fenced code block, never after a known abbreviation
("e.g.", "Ch.").
"""

from __future__ import annotations

import re
from collections.abc import Callable

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_`]*(?=\s+[A-Z\"'(\[`*_])")
_BLOCK_START = re.compile(r"^\s*(?:$|[-*+]\s|\d{1,9}[.)]\s|#{1,6}\s|\||```|~~~|>)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_FENCE = re.compile(r"^\s*(```|~~~)")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "ch", "fig", "no", "dr", "mr", "mrs", "ms", "st"})


def _after_abbreviation(line: str, end: int) -> bool:
    stem = line[:end].rstrip("\"')]*_`").rstrip(".!?")
    word = stem.rsplit(None, 1)[-1] if stem.split() else ""
    return word.lower().lstrip("(\"'") in _ABBREVIATIONS


def cut_points(text: str) -> list[int]:
    """Ascending offsets at which `text[:offset]` ends on a whole sentence or block."""
    points: list[int] = []
    lines = text.split("\n")
    offset = 0
    fence: str | None = None
    for number, line in enumerate(lines):
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1) == fence:
                fence = None
                points.append(offset + len(line))
        elif fence_match:
            fence = fence_match.group(1)
        elif line.strip() and not _HEADING.match(line):  # never end on a heading
            if not line.lstrip().startswith("|"):
                points.extend(
                    offset + m.end() for m in _SENTENCE_END.finditer(line) if not _after_abbreviation(line, m.end())
                )
            following = lines[number + 1] if number + 1 < len(lines) else ""
            ends_sentence = line.rstrip().rstrip("\"')]*_`").endswith((".", "!", "?"))
            if number + 1 == len(lines) or ends_sentence or _BLOCK_START.match(following):
                points.append(offset + len(line))
        offset += len(line) + 1
    if fence is None and text.strip():
        points.append(len(text))
    return sorted({p for p in points if text[:p].strip()})


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
