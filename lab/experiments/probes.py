"""Probes: how the ranking behaves on a corpus, learnt without labels (issue 40 item 2, measured
by `corpus_adaptation.py`).

Three kinds (`KINDS`): `heading` (a section heading no other section shares → its page), `link`
(a link's text → the page it points to) and `sentence` (a section's first prose sentence, its
heading path's words removed → its page). The service runs the sentence kind as its corpus
self-check (`service.decide.corpus_probes`, which also holds the shift's maths); the other two
stay here.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from service.decide.corpus_probes import Probe, sample, stems
from service.domain.types import Chunk
from service.ingest.markdown import CorpusPage

MAX_PROBES = 60
"""Heading probes per corpus: enough for a rate (±6 points at 60)."""
HEADING_SEPARATOR = " > "
KINDS = ("heading", "link", "sentence")
HARD_PROBES = 100
"""Link probes per corpus: their rate is further from 1, so more are needed."""
_URLISH = re.compile(r"^\S*[/:#]\S*$|\.(?:md|mdx|rst|html)$")


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
        if stems(text) <= stems(titles.get(page, "")):
            continue
        found.append(Probe(query=text, page=page))
    return sample(found, limit)
