"""The key the keyword index compares tokens by.

The match key (`normalize.text.match_key`: the Snowball (Porter 2) English stem of the plural
stem) is what the seed formula's guards match on (matched terms, title/keyword hits, exact title
phrase) and what BM25F ranks on (`lexical_key`), so "note" finds "Notes" and "deployment" the
"Deploying" page in both. Until issue 40 the guards compared plurals only while BM25F compared
stems, so a page ranked first for "deployment" had no matched term and the decision declined it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from service.normalize.text import match_key


def match_keys(tokens: Iterable[str]) -> list[str]:
    """Match keys, interned (a corpus repeats a few thousand keys millions of times)."""
    return [sys.intern(match_key(t)) for t in tokens]


def lexical_key(token: str) -> str:
    """BM25F's term key: the match key, which is already the Snowball English stem."""
    return match_key(token)
