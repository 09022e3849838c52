"""The two keys the keyword index compares tokens by.

- match key (`normalize.text.match_key`, plurals only): what the seed
  formula's guards match on (matched terms, title/keyword hits, exact title
  phrase), so "note" finds "Notes" and nothing broader.
- lexical key: the Snowball (Porter 2) English stem of the match key, broader
  ("aeroelastic"/"aeroelasticity" meet), so it is used by BM25F ranking only.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable

import Stemmer  # PyStemmer: Snowball stemmers in C

from service.normalize.text import match_key

_stemmers = threading.local()  # a PyStemmer object must not be shared across threads


def match_keys(tokens: Iterable[str]) -> list[str]:
    """Match keys, interned (a corpus repeats a few thousand keys millions of times)."""
    return [sys.intern(match_key(t)) for t in tokens]


def lexical_key(token: str) -> str:
    """BM25F's term key: the Snowball English stem of the match key."""
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    key: str = stemmer.stemWord(match_key(token))
    return key
