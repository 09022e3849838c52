"""The corpus's self-check (issue 40 item 2): questions made from the corpus itself whose answer
is known, and what p's fit makes of them.

Each *probe* is a section's first prose sentence with the words of its heading path (page title
and headings) removed, answered by its page: what a reader might ask, without the words the
keyword leg would match on the heading. Run through the real pipeline (`service.corpus_check`),
the probes give how often the first page is right (`hits`) and how sure the fit in force was on
average (`mean_p`). Their gap in logits, against the same gap on the corpora the portable fit was
made on (`decision.corpus_shift_reference`), could move p where the corpus's ranking is better or
worse than the fit expects:

    shift = strength × ((logit(hit rate) − logit(mean p)) − reference)
    p' = σ(logit(p) + shift)

Chosen leave-one-corpus-out on the twelve labelled sets' dev splits, the strength is 0: the
probes do not see which corpora rank badly (docs/quality/cross-corpus.md, seventh session), so
the shift is off by default and the figures are what an operator reads: a drop after a re-seed
says the reading or the ranking of this corpus got worse.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from service.domain.types import Chunk
from service.ingest.parse import sentences
from service.relevance.passage import opening

KIND = "sentence"
"""The probes' kind, as stored (the lab measures two more: headings and link texts)."""
MAX_PROBES = 100
"""Probes per corpus: a hit rate within about ±9 points, few enough to run at each corpus load."""
MIN_PROBES = 12
"""Below this many the corpus is not adapted: a rate of a handful of sentences says little."""
MAX_SHIFT = 1.5
"""The most the shift moves p, in logits (0.5 → 0.82 at most)."""
SENTENCE_CHARS = (40, 220)
MIN_SENTENCE_WORDS = 5
"""Words left in a probe once its heading path's words are out."""
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
_PROPERTY = re.compile(r"^[\w-]+::?\s")


@dataclass(frozen=True)
class Probe:
    query: str
    page: str


class CorpusProbes(msgspec.Struct, frozen=True, kw_only=True):
    """One corpus's self-check under one fit (`/ready`, the console, table `corpus_probes`)."""

    corpus: str
    """`calibration.corpus_fingerprint` of the pages measured (slug → content hash)."""
    fit: str
    """The version of the fit whose p was measured: another fit measures again."""
    kind: str = KIND
    probes: int
    hits: int
    """Probes whose first page is their own page."""
    mean_p: float
    """The fit's p, unshifted, averaged over the probes."""

    @property
    def hit_rate(self) -> float:
        return self.hits / self.probes if self.probes else 0.0


def first_sentence(content: str) -> str:
    """The first sentence of a chunk's prose (links as their text, code blocks out); "" when it
    opens with an outliner property (`type:: value`), which is metadata, not prose."""
    cut = sentences(opening(content, max_chars=4 * SENTENCE_CHARS[1]))
    return "" if not cut or _PROPERTY.match(cut[0]) else cut[0]


def stems(text: str) -> set[str]:
    # A five-letter prefix: "configure" in a heading gives "configuration" away too.
    return {w.casefold()[:5] for w in _WORD.findall(text)}


def sentence_probes(chunks: Iterable[Chunk], limit: int = MAX_PROBES) -> list[Probe]:
    """Each section's first prose sentence (40-220 characters), the words of its heading path
    removed, answered by its page; one probe per text (a text found twice names no one page), a
    deterministic sample (by hash) of at most `limit`."""
    found: list[Probe] = []
    seen: set[tuple[str, str]] = set()
    for chunk in chunks:
        if (chunk.doc_slug, chunk.header_path) in seen:
            continue  # a section's first chunk only
        seen.add((chunk.doc_slug, chunk.header_path))
        sentence = first_sentence(chunk.content)
        if not SENTENCE_CHARS[0] <= len(sentence) <= SENTENCE_CHARS[1]:
            continue
        given = stems(chunk.header_path)
        kept = [w for w in sentence.rstrip(".?!").split() if not (stems(w) and stems(w) <= given)]
        if len(kept) >= MIN_SENTENCE_WORDS:
            found.append(Probe(query=" ".join(kept), page=chunk.doc_slug))
    return sample(found, limit)


def sample(probes: Iterable[Probe], limit: int) -> list[Probe]:
    """One probe per query text, a deterministic sample of at most `limit` (by a hash of each)."""
    by_text: dict[str, set[Probe]] = {}
    for probe in probes:
        by_text.setdefault(probe.query.casefold(), set()).add(probe)
    unique = [next(iter(found)) for found in by_text.values() if len(found) == 1]
    return sorted(unique, key=lambda p: hashlib.sha256(f"{p.page}\n{p.query}".encode()).hexdigest())[:limit]


def logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def gap(hits: int, probes: int, mean_p: float) -> float:
    """logit(hit rate) − logit(mean p), the hit rate smoothed (+1/+2) so 0 or all hits stay finite."""
    return logit((hits + 1) / (probes + 2)) - logit(mean_p)


def shift_of(hits: int, probes: int, mean_p: float, strength: float, reference_gap: float) -> float:
    """The shift of p in logits (0 with too few probes or strength 0), clamped to ±`MAX_SHIFT`."""
    if probes < MIN_PROBES or strength == 0:
        return 0.0
    raw = strength * (gap(hits, probes, mean_p) - reference_gap)
    return max(-MAX_SHIFT, min(MAX_SHIFT, raw))


def adapted(p: float, shift: float) -> float:
    """p moved by the corpus's shift (in logits)."""
    if shift == 0:
        return p
    return 1.0 / (1.0 + math.exp(-(logit(p) + shift)))
