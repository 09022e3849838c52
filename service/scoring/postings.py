"""The keyword index's postings as numpy arrays, built by streaming units in.

Per lexical (stemmed) key: the holding units and their title, keyword,
content and identifier term frequencies (BM25F; an identifier's whole form is
a key of its own, service/scoring/lexical_units.py `identifier_keys`).  Per match key: the holding units (the
candidates the seed guards see).  Per unit: field lengths and category.
Whole titles and title bigrams map to units for the exact-title-phrase rule.
"""

from __future__ import annotations

import itertools
from array import array
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from service.scoring.lexical_units import FieldTerms, ScoringUnit, is_exact_title_phrase

Positions = npt.NDArray[np.int32]
Counts = npt.NDArray[np.float32]
Lengths = npt.NDArray[np.float64]
FieldTriple = tuple[float, float, float]
"""Title, keywords, content: the order of every per-field tuple (the identifier field has no
length: a name is shown or defined whatever else a unit shows)."""


@dataclass(frozen=True)
class LexicalPosting:
    """Units holding one lexical key (ascending) and the key's tf in each field."""

    positions: Positions
    title_tf: Counts
    keyword_tf: Counts
    content_tf: Counts
    identifier_tf: Counts | None
    definition_tf: Counts | None
    """Of the identifier tf, the names the unit defines (they count `definition_weight` more).
    Both None for a key no unit holds as (part of) a name: most words, whose arrays would be zeros."""


@dataclass(frozen=True)
class PostingArrays:
    n_units: int
    lexical: dict[str, LexicalPosting]
    match_keys: dict[str, Positions]
    lengths: tuple[Lengths, Lengths, Lengths]
    """Per unit: title, keyword and content tokens."""
    average_lengths: FieldTriple
    categories: dict[str, npt.NDArray[np.bool_]]
    whole_titles: dict[str, list[int]]
    title_bigrams: dict[str, set[int]]

    def document_frequency(self, lexical_key: str) -> int:
        """How many units hold a lexical key in any field."""
        held = self.lexical.get(lexical_key)
        return 0 if held is None else len(held.positions)

    def exact_title_units(self, keys: Sequence[str], units: Sequence[ScoringUnit]) -> list[int]:
        """Units whose title or heading is the query phrase (see is_exact_title_phrase)."""
        if not keys:
            return []
        found = set(self.whole_titles.get(" ".join(keys), ()))
        if len(keys) >= 2:
            pairs = [f"{a} {b}" for a, b in itertools.pairwise(keys)]
            holders = set.intersection(*(self.title_bigrams.get(p, set()) for p in pairs))
            found |= {u for u in holders if is_exact_title_phrase(keys, units[u].title_phrases)}
        return sorted(found)


class PostingBuilder:
    """Streams units into compact posting buffers, so a unit's term counts are
    dropped as soon as they are recorded (building 100k chunks never holds
    100k dictionaries of counts at once)."""

    def __init__(self) -> None:
        self._match: dict[str, array[int]] = {}
        self._positions: dict[str, array[int]] = {}
        self._tfs: dict[str, tuple[array[float], array[float], array[float], array[float], array[float]]] = {}
        self._lengths: tuple[array[float], array[float], array[float]] = (array("d"), array("d"), array("d"))
        self._totals = [0, 0, 0]

    def add(self, position: int, unit: ScoringUnit, terms: FieldTerms) -> None:
        """Record unit number `position` (units must be added in order)."""
        for key in {*unit.title_keys, *unit.keyword_keys, *unit.content_keys}:
            self._match.setdefault(key, array("i")).append(position)
        fields = (terms.title_tf, terms.keyword_tf, terms.content_tf, terms.identifier_tf, terms.definition_tf)
        for key in terms.title_tf.keys() | terms.keyword_tf.keys() | terms.content_tf.keys() | terms.identifier_tf.keys():
            tfs = self._tfs.get(key)
            if tfs is None:
                self._positions[key] = array("i")
                tfs = self._tfs[key] = (array("f"), array("f"), array("f"), array("f"), array("f"))
            self._positions[key].append(position)
            for counts, tf in zip(tfs, fields, strict=True):
                counts.append(tf.get(key, 0))
        for i, length in enumerate((terms.title_length, terms.keyword_length, terms.content_length)):
            self._lengths[i].append(length)
            self._totals[i] += length

    def finish(self, units: Sequence[ScoringUnit]) -> PostingArrays:
        labels = np.asarray([u.category for u in units])
        whole: dict[str, list[int]] = defaultdict(list)
        bigrams: dict[str, set[int]] = defaultdict(set)
        for position, unit in enumerate(units):
            for phrase in unit.title_phrases:
                whole[phrase].append(position)
                for first, second in itertools.pairwise(phrase.split()):
                    bigrams[f"{first} {second}"].add(position)
        n = max(len(units), 1)
        title_lengths, keyword_lengths, content_lengths = self._lengths
        # int32 positions and float32 counts: half the memory of numpy's defaults.
        return PostingArrays(
            n_units=len(units),
            lexical={
                key: LexicalPosting(_positions(self._positions[key]), _counts(title), _counts(keyword),
                                    _counts(content), _sparse(identifier), _sparse(definition))
                for key, (title, keyword, content, identifier, definition) in self._tfs.items()
            },
            match_keys={key: _positions(pos) for key, pos in self._match.items()},
            lengths=(_lengths(title_lengths), _lengths(keyword_lengths), _lengths(content_lengths)),
            average_lengths=(self._totals[0] / n, self._totals[1] / n, self._totals[2] / n),
            categories={c: labels == c for c in set(labels.tolist())},
            whole_titles=dict(whole),
            title_bigrams=dict(bigrams),
        )


def _positions(held: array[int]) -> Positions:
    return np.frombuffer(held, dtype=np.int32).copy()


def _counts(tf: array[float]) -> Counts:
    return np.frombuffer(tf, dtype=np.float32).copy()


def _sparse(tf: array[float]) -> Counts | None:
    return _counts(tf) if any(tf) else None


def _lengths(lengths: array[float]) -> Lengths:
    return np.frombuffer(lengths, dtype=np.float64).copy()
