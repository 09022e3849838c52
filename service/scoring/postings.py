"""The keyword index's postings as numpy arrays, built by streaming units in.

Per lexical (stemmed) key: the holding units and their title, keyword and
content term frequencies (BM25F).  Per identifier key (service/scoring/lexical_units.py
`identifier_keys`: a name's whole and compact forms): the units
showing a name that holds it, how often, and how many such names they define;
apart from the words', so that a word's document frequency is the text's alone.
Per match key: the holding units (the candidates the seed guards see).  Per unit:
field lengths and category.
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
"""Title, keywords, content: the order of every per-field tuple."""


@dataclass(frozen=True)
class LexicalPosting:
    """Units holding one lexical key (ascending) and the key's tf in each field."""

    positions: Positions
    title_tf: Counts
    keyword_tf: Counts
    content_tf: Counts


@dataclass(frozen=True)
class NamePosting:
    """Units showing a name that holds one identifier key (ascending): times shown, and names
    defined (None where the key's names are defined nowhere)."""

    positions: Positions
    shown_tf: Counts
    defined_tf: Counts | None


@dataclass(frozen=True)
class PostingArrays:
    n_units: int
    lexical: dict[str, LexicalPosting]
    names: dict[str, NamePosting]
    match_keys: dict[str, Positions]
    lengths: tuple[Lengths, Lengths, Lengths]
    """Per unit: title, keyword and content tokens."""
    average_lengths: FieldTriple
    categories: dict[str, npt.NDArray[np.bool_]]
    whole_titles: dict[str, list[int]]
    title_bigrams: dict[str, set[int]]

    def document_frequency(self, lexical_key: str) -> int:
        """How many units hold a lexical key in their text (the names they show aside)."""
        held = self.lexical.get(lexical_key)
        return 0 if held is None else len(held.positions)

    def defines(self, identifier_key: str) -> bool:
        """Some unit defines a name that holds the key."""
        shown = self.names.get(identifier_key)
        return shown is not None and shown.defined_tf is not None

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
        self._lexical: dict[str, tuple[array[int], array[float], array[float], array[float]]] = {}
        self._lengths: tuple[array[float], array[float], array[float]] = (array("d"), array("d"), array("d"))
        self._totals = [0, 0, 0]
        self._names: dict[str, tuple[array[int], array[float], array[float]]] = {}

    def add(self, position: int, unit: ScoringUnit, terms: FieldTerms) -> None:
        """Record unit number `position` (units must be added in order)."""
        for key in {*unit.title_keys, *unit.keyword_keys, *unit.content_keys}:
            self._match.setdefault(key, array("i")).append(position)
        for key in terms.title_tf.keys() | terms.keyword_tf.keys() | terms.content_tf.keys():
            held = self._lexical.get(key)
            if held is None:
                held = self._lexical[key] = (array("i"), array("f"), array("f"), array("f"))
            held[0].append(position)
            held[1].append(terms.title_tf.get(key, 0))
            held[2].append(terms.keyword_tf.get(key, 0))
            held[3].append(terms.content_tf.get(key, 0))
        for key, times in terms.identifier_tf.items():
            shown = self._names.get(key)
            if shown is None:
                shown = self._names[key] = (array("i"), array("f"), array("f"))
            shown[0].append(position)
            shown[1].append(times)
            shown[2].append(terms.definition_tf.get(key, 0))
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
        title, keyword, content = self._lengths
        return PostingArrays(
            n_units=len(units),
            # int32 positions and float32 counts: half the memory of numpy's defaults.
            lexical={
                key: LexicalPosting(
                    positions=np.frombuffer(pos, dtype=np.int32).copy(),
                    title_tf=np.frombuffer(title_tf, dtype=np.float32).copy(),
                    keyword_tf=np.frombuffer(keyword_tf, dtype=np.float32).copy(),
                    content_tf=np.frombuffer(content_tf, dtype=np.float32).copy(),
                )
                for key, (pos, title_tf, keyword_tf, content_tf) in self._lexical.items()
            },
            names={
                key: NamePosting(np.frombuffer(pos, dtype=np.int32).copy(), np.frombuffer(shown, dtype=np.float32).copy(),
                                 np.frombuffer(defined, dtype=np.float32).copy() if any(defined) else None)
                for key, (pos, shown, defined) in self._names.items()
            },
            match_keys={key: np.frombuffer(pos, dtype=np.int32).copy() for key, pos in self._match.items()},
            lengths=(
                np.frombuffer(title, dtype=np.float64).copy(),
                np.frombuffer(keyword, dtype=np.float64).copy(),
                np.frombuffer(content, dtype=np.float64).copy(),
            ),
            average_lengths=(self._totals[0] / n, self._totals[1] / n, self._totals[2] / n),
            categories={c: labels == c for c in set(labels.tolist())},
            whole_titles=dict(whole),
            title_bigrams=dict(bigrams),
        )
