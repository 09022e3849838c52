"""Probes: how the ranking behaves on a corpus, learnt without labels (issue 40 item 2, measured
by `corpus_adaptation.py`; it did not pay, so the service does not run it).

Three kinds (`KINDS`): `heading` (below), `link` (a link's text → the page it points to) and
`sentence` (a section's first prose sentence, its heading path's words removed → its page); the
last two are harder, so that the hit rate may see which corpora rank badly.

A portable fit's p is calibrated on average over the corpora it was fitted on; a corpus whose
ranking is usually right deserves more answers, one whose ranking is often wrong fewer (issue 40).
The corpus tells which it is without labels: its own section headings are questions whose answer
is known (the page the heading is on). Each *probe* (a heading that no other section of the corpus
shares, two words or more) goes through the real pipeline; what comes back is how often the first
page is the heading's page (`hits`) and how sure p was on average (`mean_p`). Their gap, in logits,
against the same gap on the corpora the fit was made on, moves p:

    shift = strength × ((logit(hit rate) − logit(mean p)) − reference_gap)
    p' = σ(logit(p) + shift)

`strength` is chosen leave-one-corpus-out on the labelled corpora's dev splits, the reference is
the same gap on the corpora the fit was made on; the shift is clamped so that one odd corpus cannot
flip decisions wholesale.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from service.domain.types import Chunk
from service.ingest.markdown import CorpusPage
from service.ingest.parse import sentences
from service.relevance.passage import opening

MAX_PROBES = 60
"""Probes per corpus: enough for a rate (±6 points at 60), few enough to run at every seed."""
MIN_PROBES = 12
"""Below this many the corpus is not adapted: a rate of a handful of headings says little."""
MAX_SHIFT = 1.5
"""The most the shift moves p, in logits (0.5 → 0.82 at most)."""
HEADING_SEPARATOR = " > "
KINDS = ("heading", "link", "sentence")
HARD_PROBES = 100
"""Probes per corpus of the harder kinds: their rate is further from 1, so more are needed."""
SENTENCE_CHARS = (40, 220)
MIN_SENTENCE_WORDS = 5
"""Words left in a sentence probe once its heading path's words are out."""
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
_PROPERTY = re.compile(r"^[\w-]+::?\s")
_URLISH = re.compile(r"^\S*[/:#]\S*$|\.(?:md|mdx|rst|html)$")


@dataclass(frozen=True)
class Probe:
    query: str
    page: str


class CorpusAdaptation(msgspec.Struct, frozen=True, kw_only=True):
    """One corpus's probe figures and the shift they give (`/ready`, the console, PostgreSQL)."""

    pages_fingerprint: str
    model_version: str
    """The fit whose p was measured: another fit measures again."""
    probes: int
    hits: int
    mean_p: float
    shift: float

    @property
    def hit_rate(self) -> float:
        return self.hits / self.probes if self.probes else 0.0


def make_probes(chunks: Iterable[Chunk], limit: int = MAX_PROBES) -> list[Probe]:
    """Section headings no other section shares (two words or more), each with its page; a
    deterministic sample (by hash) of at most `limit`."""
    seen: dict[str, set[str]] = {}
    for chunk in chunks:
        parts = chunk.header_path.split(HEADING_SEPARATOR)
        if len(parts) < 2:
            continue  # the page's own title: the exact-title signal answers it, it says nothing
        heading = " ".join(parts[-1].split())
        if len(heading.split()) < 2:
            continue
        seen.setdefault(heading.casefold(), set()).add(f"{chunk.doc_slug}\n{heading}")
    unique = [next(iter(v)).split("\n", 1) for v in seen.values() if len(v) == 1]
    ordered = sorted(unique, key=lambda sh: hashlib.sha256("\n".join(sh).encode()).hexdigest())
    return [Probe(query=heading, page=slug) for slug, heading in ordered[:limit]]


def _sample(probes: Iterable[Probe], limit: int) -> list[Probe]:
    """One probe per query text (a text found twice names no one page), a deterministic sample."""
    by_text: dict[str, set[str]] = {}
    for probe in probes:
        by_text.setdefault(probe.query.casefold(), set()).add(f"{probe.page}\n{probe.query}")
    unique = [next(iter(v)) for v in by_text.values() if len(v) == 1]
    ordered = sorted(unique, key=lambda text: hashlib.sha256(text.encode()).hexdigest())
    return [Probe(query=query, page=page) for page, query in (t.split("\n", 1) for t in ordered[:limit])]


def _stems(text: str) -> set[str]:
    # A five-letter prefix: "configure" in a heading gives "configuration" away too.
    return {w.casefold()[:5] for w in _WORD.findall(text)}


def link_probes(pages: Sequence[CorpusPage], chunks: Sequence[Chunk], seeds_dir: Path,
                limit: int = HARD_PROBES) -> list[Probe]:
    """A link's text → the page it points to, mined as the relevance pairs are (`lab.relevance.pairs`:
    generic texts, texts that repeat the target's heading or title, external links are out); here
    also addresses and texts whose words are all the target's title's. Markdown links only: a
    wikilink's text is its target's name, so seed and Logseq give next to none."""
    from lab.relevance.pairs import SetMiner
    from lab.relevance.pool import PoolSet
    from service.flags import Flags

    miner = SetMiner(PoolSet(name=seeds_dir.name, folder=seeds_dir, commit="", repository="", pages=pages,
                             chunks=chunks), Flags())
    titles = {p.doc.slug: p.doc.title for p in pages}
    found = []
    for candidate in miner.candidates():
        text, page = candidate.anchor, candidate.section.page
        if candidate.kind != "link" or _URLISH.search(text):
            continue
        if _stems(text) <= _stems(titles.get(page, "")):
            continue
        found.append(Probe(query=text, page=page))
    return _sample(found, limit)


def first_sentence(content: str) -> str:
    """The first sentence of a chunk's prose (links as their text, code blocks out); "" when it
    opens with an outliner property (`type:: value`), which is metadata, not prose."""
    cut = sentences(opening(content, max_chars=4 * SENTENCE_CHARS[1]))
    return "" if not cut or _PROPERTY.match(cut[0]) else cut[0]


def sentence_probes(chunks: Iterable[Chunk], limit: int = HARD_PROBES) -> list[Probe]:
    """Each section's first prose sentence (40-220 characters), the words of its heading path
    (page title and headings) removed, answered by its page: what a reader might ask, without
    the words the keyword leg would match on the heading."""
    found = []
    seen: set[tuple[str, str]] = set()
    for chunk in chunks:
        if (chunk.doc_slug, chunk.header_path) in seen:
            continue  # a section's first chunk only
        seen.add((chunk.doc_slug, chunk.header_path))
        sentence = first_sentence(chunk.content)
        if not SENTENCE_CHARS[0] <= len(sentence) <= SENTENCE_CHARS[1]:
            continue
        given = _stems(chunk.header_path)
        kept = [w for w in sentence.rstrip(".?!").split() if not (_stems(w) and _stems(w) <= given)]
        if len(kept) >= MIN_SENTENCE_WORDS:
            found.append(Probe(query=" ".join(kept), page=chunk.doc_slug))
    return _sample(found, limit)


def logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def gap(hits: int, probes: int, mean_p: float) -> float:
    """logit(hit rate) − logit(mean p), the hit rate smoothed (+1/+2) so 0 or all hits stay finite."""
    return logit((hits + 1) / (probes + 2)) - logit(mean_p)


def shift_of(hits: int, probes: int, mean_p: float, strength: float, reference_gap: float) -> float:
    if probes < MIN_PROBES or strength == 0:
        return 0.0
    raw = strength * (gap(hits, probes, mean_p) - reference_gap)
    return max(-MAX_SHIFT, min(MAX_SHIFT, raw))


def measure(
    outcomes: Sequence[tuple[Probe, str | None, float]], pages_fingerprint: str, model_version: str,
    strength: float, reference_gap: float,
) -> CorpusAdaptation:
    """(probe, first page, p) of each probe run → the corpus's figures and shift."""
    probes = len(outcomes)
    hits = sum(1 for probe, first, _ in outcomes if first == probe.page)
    mean_p = sum(p for _, _, p in outcomes) / probes if probes else 0.0
    return CorpusAdaptation(
        pages_fingerprint=pages_fingerprint, model_version=model_version, probes=probes, hits=hits,
        mean_p=round(mean_p, 4), shift=round(shift_of(hits, probes, mean_p, strength, reference_gap), 4),
    )


def adapted(p: float, shift: float) -> float:
    """p moved by the corpus's shift (in logits)."""
    if shift == 0:
        return p
    return 1.0 / (1.0 + math.exp(-(logit(p) + shift)))
