"""Query type (exact / semantic / mixed): which fusion weights a query gets.

Detected once, while normalising (`NormalizedQuery.query_type`), from the raw
text: normalisation would erase the case and quotes it looks at.
"""

from __future__ import annotations

import re

from service.domain.types import QueryType

_QUOTED = re.compile(r"\"[^\"]+\"|'[^']+'|“[^”]+”|‘[^’]+’|`[^`]+`")
_ALL_CAPS = re.compile(r"\b[A-Z][A-Z0-9_]*[A-Z0-9]\b")
_CAMEL = re.compile(r"\b[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*\b")
_CODE = re.compile(
    r"\b\w+_\w+\b"  # snake_case
    r"|\b\w+(?:\.\w+)*\(\)"  # call: foo(), a.b()
    r"|\b[a-z_]\w+\.[a-z_]\w+\b"  # dotted name: app.config, notes.md (not "e.g.")
    r"|(?:^|\s)/[\w.-]+"  # a path or route: /admin/reindex
    r"|(?:^|\s)--?[a-z][\w-]*"  # a flag: --verbose, -v
    r"|(?:^|\s)[:@.][A-Za-z][\w-]*"  # a command, decorator or file type: :write, @requires, .env
    r"|\w::\w"  # a path in Rust or C++: Trust::Reduced
    r"|[{}<>=\[\]#$]"  # symbols that do not occur in prose questions
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
QUESTION_WORDS = frozenset(
    {
        "how", "what", "where", "why", "when", "which", "who", "can", "could",
        "do", "does", "did", "is", "are", "should", "will", "would",
    }
)  # fmt: skip
NATURAL_MIN_WORDS = 4
"""Distinct words that make a sentence (a word typed a hundred times is still one word)."""
HOW_TO_FRAME = re.compile(
    r"^(?:how\s+(?:do|can|could|should|would|will)\s+(?:i|we|you)|how\s+to"
    r"|is\s+(?:it\s+possible|there\s+a\s+way)\s+to|i\s+(?:want|need|would\s+like)\s+to|help\s+me(?:\s+to)?)\s+",
    re.IGNORECASE,
)
"""How a user asks to be shown how, not what they ask about: "how do I remove a widget" is
typed as "remove a widget" would be, so the frame alone never changes how a query is weighed
and decided (issue 40: adding "how do I" to a term must not decide worse than the term)."""


def detect_query_type(raw_query: str) -> QueryType:
    """Classify a raw query (before normalisation, which would erase case and quotes).

    exact: a quoted string, an ALL_CAPS token (unless the whole query is a shouted sentence),
    camelCase, or a code-like token (snake_case, `a.b()`, `/path`, `--flag`, `:command`,
    `@decorator`, `.env`, `A::B`).
    semantic: a question (ends with "?" or starts with a question word) or a
    natural sentence of 4+ distinct words; after a how-to frame ("how do I", "how to",
    "I want to") only the rest counts. Otherwise mixed. Exact wins over semantic:
    "what does DOC_RETRIEVAL_PHASE do?" needs the literal term.
    """
    text = raw_query.strip()
    if not text:
        return "mixed"
    letters = [c for c in text if c.isalpha()]
    # A sentence in capitals is shouting; one word in capitals is a name (GOMAXPROCS, an acronym).
    shouted = bool(letters) and all(c.isupper() for c in letters) and len(text.split()) > 1
    if (
        _QUOTED.search(text)
        or _CAMEL.search(text)
        or _CODE.search(text)
        or (not shouted and _ALL_CAPS.search(text))
    ):
        return "exact"
    frame = HOW_TO_FRAME.match(text)
    if frame:
        text = text[frame.end():].rstrip(" ?")
    words = _WORD.findall(text)
    if not frame and (text.endswith("?") or (words and words[0].lower() in QUESTION_WORDS)):
        return "semantic"
    if len({w.lower() for w in words}) >= NATURAL_MIN_WORDS:
        return "semantic"
    return "mixed"
