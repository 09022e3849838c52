"""Automatic keywords for seed documents whose front matter has none.

How: the title and every Markdown heading count three times, body text once.
Words are lower-cased runs of letters/digits/hyphens of at least three
characters, minus English stopwords, generic documentation verbs and pure
numbers.  The text comes from the page's one parse (service/ingest/parse.py):
plain prose without code (fenced, indented or inline), link targets, images
or markup, so every code block is out whatever its fence (``` or ~~~). Terms are ranked
by weighted frequency, ties broken by first appearance, and the top
`MAX_KEYWORDS` are kept. Deterministic: same text, same keywords.
"""

from __future__ import annotations

import re
from collections import Counter

from service.ingest.parse import ParsedPage

MAX_KEYWORDS = 8
HEADING_WEIGHT = 3

STOPWORDS = frozenset(
    (
        "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and",
        "any", "are", "as", "at", "be", "because", "been", "before", "being", "below",
        "between", "both", "but", "by", "can", "cannot", "could", "did", "do", "does", "doing",
        "down", "during", "each", "either", "else", "etc", "even", "ever", "every", "few",
        "for", "from", "further", "get", "gets", "got", "had", "has", "have", "having", "he",
        "her", "here", "hers", "him", "his", "how", "however", "i", "if", "in", "into", "is",
        "it", "its", "itself", "just", "let", "like", "may", "me", "might", "more", "most",
        "much", "must", "my", "no", "nor", "not", "now", "of", "off", "often", "on", "once",
        "one", "only", "or", "other", "our", "ours", "out", "over", "own", "per", "same", "she",
        "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
        "then", "there", "these", "they", "this", "those", "through", "to", "too", "two",
        "under", "until", "up", "upon", "us", "use", "used", "uses", "using", "very", "via",
        "was", "we", "were", "what", "when", "where", "whether", "which", "while", "who",
        "whom", "why", "will", "with", "within", "without", "would", "yes", "yet", "you",
        "your", "yours", "click", "open", "see", "select", "shows", "show", "want", "way",
        "make", "makes", "go", "goes", "new", "back", "first", "next",
    )
)

_URL = re.compile(r"https?://\S+")
_WORD = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(_URL.sub(" ", text).lower()) if len(w) >= 3 and w not in STOPWORDS]


def extract_keywords(title: str, page: ParsedPage, limit: int = MAX_KEYWORDS) -> tuple[str, ...]:
    """Top terms of a page, most important first (see module docstring)."""
    scores: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    ordered = [(title, HEADING_WEIGHT), (" ".join(page.headings), HEADING_WEIGHT), (page.plain, 1)]
    for text, weight in ordered:
        for word in _words(text):
            scores[word] += weight
            first_seen.setdefault(word, len(first_seen))
    ranked = sorted(scores, key=lambda w: (-scores[w], first_seen[w]))
    return tuple(ranked[:limit])
