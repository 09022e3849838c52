"""Pure text functions shared by query and document normalisation.

Queries and documents go through the same steps so that a query token and a
document token meet in the same form: clean → lowercase → phrase synonyms →
tokenise → stopwords → word synonyms → conservative plural stemming.
"""

from __future__ import annotations

import re
import sys
import threading
import unicodedata
from collections.abc import Iterable, Mapping

import Stemmer  # PyStemmer: Snowball stemmers in C

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_APOSTROPHES = re.compile(r"['\u2019\u02bc]")
_TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
"""An ANSI/VT100 control sequence (CSI: colours, cursor moves), as pasted from a terminal."""


def clean(raw: str) -> str:
    """NFKC-normalise, drop control and invisible format characters, trim.

    Control characters (NUL, bell, escapes) and format characters (zero-width
    spaces, bidi overrides) carry no meaning in a query and could corrupt
    logs: they vanish, as they are invisible inside a word ("work\x00space",
    "work\u200bspace"), and so do terminal colour codes pasted with text
    ("\x1b[31mhome"). Whitespace controls (tab, newline) separate words: spaces.
    """
    text = _TERMINAL_ESCAPE.sub("", unicodedata.normalize("NFKC", raw))
    kept = [
        " " if ch.isspace() or unicodedata.category(ch) in ("Zl", "Zp")
        else "" if unicodedata.category(ch) in ("Cf", "Cc")
        else ch
        for ch in text
    ]
    return " ".join("".join(kept).split())


def script_of(word: str) -> str | None:
    """The writing system of a word's first letter as Unicode names it (`LATIN`, `CYRILLIC`,
    `ARABIC`, `HEBREW`, `CJK`, `HIRAGANA`...); None for a word without letters (`42`)."""
    letter = next((ch for ch in word if ch.isalpha()), None)
    if letter is None:
        return None
    name = unicodedata.name(letter, "")
    return name.split(" ", 1)[0] if name else None


def without_scripts(text: str, scripts: frozenset[str]) -> tuple[str, list[str]]:
    """`text` less its whitespace-separated words written in a script outside `scripts`, and
    those words. A word whose letters are in no script is kept (numbers, symbols)."""
    kept: list[str] = []
    left_out: list[str] = []
    for word in text.split():
        script = script_of(word)
        (left_out if script is not None and script not in scripts else kept).append(word)
    return " ".join(kept), left_out


def lowercase_words(text: str) -> str:
    """Lowercase and replace punctuation by spaces ("Quick-Links!" → "quick links").

    Apostrophes are dropped rather than split so "what's" stays one stopword.
    """
    text = _APOSTROPHES.sub("", text.lower())
    return " ".join(_WORD.findall(text))


def words(text: str) -> list[str]:
    """Split already-lowercased text into word tokens."""
    return _WORD.findall(text)


def apply_phrase_synonyms(text: str, phrases: Mapping[str, str]) -> tuple[str, list[str]]:
    """Rewrite whole phrases in lowercased text; returns the text and the rules used.

    Longer phrases are tried first so "keyboard shortcuts" wins over "shortcuts".
    """
    used: list[str] = []
    padded = f" {text} "
    for phrase in sorted(phrases, key=len, reverse=True):
        needle = f" {phrase} "
        if needle in padded:
            padded = padded.replace(needle, f" {phrases[phrase]} ")
            used.append(f"{phrase} → {phrases[phrase]}")
    return padded.strip(), used


def apply_word_synonyms(tokens: Iterable[str], rewrites: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """Replace single tokens (a rewrite may expand to several words)."""
    out: list[str] = []
    used: list[str] = []
    for token in tokens:
        replacement = rewrites.get(token)
        if replacement is None:
            out.append(token)
        else:
            out.extend(replacement.split())
            used.append(f"{token} → {replacement}")
    return out, used


_NO_STRIP_ENDINGS = ("ss", "us", "is")
_SIBILANT_ENDINGS = ("ses", "xes", "zes", "ches", "shes")


def stem_plural(token: str, known_terms: frozenset[str] = frozenset()) -> str:
    """The seed plan's conservative stemming: only plurals, only long, never known terms.

    ``ies → y`` (entries → entry), ``es`` after a sibilant (boxes → box,
    searches → search), otherwise a final ``s`` (widgets → widget).  Tokens
    under 4 characters and known terms (titles, keywords, widget names, core
    concepts) are left alone, as are words ending in ss/us/is (access, status,
    analysis), which are not plurals.
    """
    if len(token) < 4 or token in known_terms or not token.endswith("s"):
        return token
    if token.endswith(_NO_STRIP_ENDINGS):
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith(_SIBILANT_ENDINGS):
        return token[:-2]
    return token[:-1]


def match_key(token: str) -> str:
    """The form two tokens are compared in: the Snowball (Porter 2) English stem of the plural
    stem, known terms included.

    Stemming keeps known terms intact in what the user sees (matched terms,
    corrections), but "note" must still find the "Notes" page, and "deployment", "deploying"
    and "deploy" one another (issue 40: the seed guards compared plurals only, so "deployment"
    matched no word of a page titled "Deploying your docs" that BM25F ranked first).
    """
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    key: str = stemmer.stemWord(stem_plural(token))
    return key


_stemmers = threading.local()  # a PyStemmer object must not be shared across threads


def normalise_words(
    text: str,
    *,
    stopwords: frozenset[str],
    phrase_synonyms: Mapping[str, str],
    word_synonyms: Mapping[str, str],
    known_terms: frozenset[str],
) -> list[str]:
    """Document-side normalisation: the query steps minus typo correction."""
    lowered, _ = apply_phrase_synonyms(lowercase_words(clean(text)), phrase_synonyms)
    kept = [t for t in words(lowered) if t not in stopwords]
    rewritten, _ = apply_word_synonyms(kept, word_synonyms)
    # Interned: a corpus repeats a few thousand words millions of times, and
    # the index keeps them in per-unit sets; one string object per word, not per use.
    return [sys.intern(stem_plural(t, known_terms)) for t in rewritten if t not in stopwords]


def rewrite_for_embedding(
    text: str,
    phrase_synonyms: Mapping[str, str],
    word_synonyms: Mapping[str, str],
    corrections: Mapping[str, str] | None = None,
) -> str:
    """The query as the embedding model should read it: all words kept, synonyms and typo fixes applied.

    Synonyms are a product decision ("shortcuts" are quick links here); the
    embedding model does not know them, so it reads the rewritten words. It
    reads a misspelt word as unrelated word pieces, so it reads the correction
    (`corrections`: word as typed -> corrected word) instead.
    """
    rewritten, _ = apply_phrase_synonyms(lowercase_words(clean(text)), phrase_synonyms)
    swapped, _ = apply_word_synonyms(words(rewritten), word_synonyms)
    fixes = corrections or {}
    return " ".join(fixes.get(word, word) for word in swapped)
