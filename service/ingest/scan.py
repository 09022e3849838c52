"""Regex scans that stay linear on hostile text (issue 33 item 2: bounded time per page).

A pattern such as `\\[\\[([^\\]\\n]+)\\]\\]` costs the length of the line at every `[[`
of a line that never closes one: `re.sub` retries each start and rescans the same span,
so 10,000 `[[` on a line cost 10,000 x 20,000 steps. `Scan` runs such a pattern so that
each character is scanned once: its `head` matches where the pattern can start and spans
the part of the text that decides it (up to the first `]` or line end). A start whose
match fails is not retried inside that span, because every start there stops at the same
character and fails the same way. Results are exactly those of the plain pattern (the unit
tests compare them on generated text).

`code_spans` does the same for `` (`+)(.+?)\\1 `` (inline code), whose plain regex is
cubic on a line of backticks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Scan:
    """`pattern` found as `re` finds it, each span between a start and its deciding character
    scanned once.

    Contract (checked by tests/unit/test_parse_bounds.py for every Scan here): `pattern`
    never matches empty; wherever it matches, `head` matches at the same start; and when it
    fails at a start, it fails at every later start inside that start's `head` span.
    """

    pattern: re.Pattern[str]
    head: re.Pattern[str]

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        pos = 0
        while (head := self.head.search(text, pos)) is not None:
            start = head.start()
            match = self.pattern.match(text, start)
            if match is not None:
                yield match
                pos = match.end()
            else:
                pos = max(head.end(), start + 1)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        out: list[str] = []
        last = 0
        for match in self.finditer(text):
            out.append(text[last : match.start()])
            out.append(repl(match) if callable(repl) else match.expand(repl))
            last = match.end()
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def findall(self, text: str) -> list[str]:
        """Group 1 of every match (the pattern's one group), as `re.findall` gives it."""
        return [match.group(1) for match in self.finditer(text)]

    def search(self, text: str) -> re.Match[str] | None:
        return next(self.finditer(text), None)


_BACKTICKS = re.compile(r"`+")


def code_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each match of `` re.compile(r"(`+)(.+?)\\1", re.DOTALL) ``, in linear time.

    At a run of L backticks the regex tries an opener of k = L, L-1, … 1 backticks, each
    closed by the first k backticks at least one character later. The largest k that closes
    is the larger of min(L, M), M the longest run after this one (closed by the first later
    run of k or more), and (L - 1) // 2 (closed inside the run itself).
    """
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    longest_after = [0] * (len(runs) + 1)  # longest run among runs[i:]
    for i in range(len(runs) - 1, -1, -1):
        longest_after[i] = max(longest_after[i + 1], runs[i][1] - runs[i][0])
    i, pos = 0, 0
    while i < len(runs):
        start, run_end = max(runs[i][0], pos), runs[i][1]
        length = run_end - start
        if length <= 0:
            i += 1
            continue
        later = min(length, longest_after[i + 1])
        inside = (length - 1) // 2
        if later == 0 and inside == 0:
            return  # at most two backticks and none after them: nothing closes any more
        if inside >= later:
            pos = start + 2 * inside + 1
            yield start, pos
            continue  # the rest of this run may open the next span
        j = i + 1
        while runs[j][1] - runs[j][0] < later:  # runs passed here end inside the span
            j += 1
        pos = runs[j][0] + later
        yield start, pos
        i = j


FENCE = re.compile(r"^\s*(?:>\s*)*(?:[-*+]\s+|\d{1,9}[.)]\s+)?(`{3,}|~{3,})")
"""A fenced code block's opening or closing line (in a quote or a list item too)."""

LineKind = Literal["text", "fence", "code"]


def fenced_lines(markdown: str) -> Iterator[tuple[str, LineKind]]:
    """Each line of `markdown` with what it is: text, a fence's opening or closing line, or
    code inside a fence (closed by a fence of the same character, at least as long)."""
    fence: str | None = None
    for line in markdown.split("\n"):
        opened = FENCE.match(line)
        if fence is not None:
            if opened is not None and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
                yield line, "fence"
            else:
                yield line, "code"
        elif opened is not None:
            fence = opened.group(1)
            yield line, "fence"
        else:
            yield line, "text"
