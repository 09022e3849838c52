"""(anchor, section) pairs mined from a documentation set without labels, with negatives.

Four kinds of pair, each something a reader might say next to the passage that
answers it (issue 41):

- `link`: a link's text → the section it points to (heading path + opening);
- `heading`: a section's heading → its body, the heading and breadcrumb removed;
- `title`: a page's title → the page's opening, without its heading;
- `definition`: a definition-list term or an API entry's signature → its
  description (heading path + description).

Every pair comes as a group: the positive and its negatives, cut the same way
(service/relevance/passage.py): the sections of other pages that the service's
own keyword ranking (phase 2's chunk index) puts first for the anchor text
(hard negatives: the ranking the model is to correct), plus random sections of
other pages of the set. A section of the positive's own page is never a
negative: another section of the page a title or a link names may answer too.

Anchors that say nothing on their own are dropped: link texts such as "here",
headings and titles that several sections of the set share ("Example"), and
link texts that only repeat the heading or title they point to (those are
`heading` and `title` pairs already).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from lab.relevance.pool import PoolSet
from service.domain.types import Chunk
from service.flags import Flags
from service.ingest.chunker import HEADER_SEPARATOR
from service.ingest.identifiers import MARKDOWN_LINK
from service.ingest.links import CorpusLinks
from service.ingest.markdown import CorpusPage
from service.ingest.parse import URL_SCHEME, Link, anchor_slug, clean_inline
from service.relevance.passage import opening, passage

KINDS = ("link", "heading", "title", "definition")
MIN_ANCHOR_CHARS = 3
MAX_ANCHOR_CHARS = 120
MIN_PASSAGE_CHARS = 40
SHARED_HEADING = 3
"""A heading (or title) found this often in a set names no one section ("Example", "Usage")."""
SEARCH_DEPTH = 30
GENERIC_LINK_TEXT = frozenset({
    "here", "this", "this page", "link", "docs", "documentation", "see", "more", "click here", "read more",
    "this section", "below", "above", "guide", "the docs", "the documentation", "source", "details",
    "this guide", "that", "the guide", "example", "examples",
})
_TERM_ITEM = re.compile(
    r"^[-*+]\s+(?:\*\*(?P<bold>[^*\n]+?)\*\*|`(?P<code>[^`\n]+)`)\s*(?::|—|–|\s-\s)\s*(?P<desc>\S.*)", re.DOTALL
)
_SIGNATURE = re.compile(r"^`(?P<sig>[^`\n]+)`$")


@dataclass(frozen=True)
class MiningOptions:
    per_kind: int = 400
    """Most groups of one kind taken from one set (a fixed sample: the large sets would
    otherwise be most of the data)."""
    hard_negatives: int = 2
    random_negatives: int = 1
    seed: int = 0


@dataclass(frozen=True)
class Group:
    """One anchor with its positive passage and its negatives (the model's second text)."""

    kind: str
    corpus: str
    anchor: str
    positive: str
    page: str
    negatives: tuple[str, ...] = ()
    hard: int = 0
    """How many of `negatives` come from the keyword ranking (the rest are random)."""
    above: int = 0
    """Sections of other pages the keyword ranking puts above the positive (within its first 30)."""

    @property
    def key(self) -> str:
        """Stable identity: the sample, the held-out split and the order are drawn on it."""
        return _digest(f"{self.corpus}\x00{self.kind}\x00{self.anchor}\x00{self.page}")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(eq=False)  # one object per section: compared by identity
class _Section:
    """A section as the chunker cut it: its chunks share the page and the heading path."""

    page: str
    header_path: str
    anchor: str
    first: Chunk
    chunks: list[Chunk] = field(default_factory=list)

    def text(self, with_path: bool) -> str:
        return passage(self.header_path if with_path else None, self.first.content)


@dataclass(frozen=True)
class _Candidate:
    kind: str
    anchor: str
    section: _Section
    with_path: bool

    @property
    def key(self) -> str:
        return _digest(f"{self.kind}\x00{_norm(self.anchor)}\x00{self.section.page}\x00{self.section.header_path}")


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[`*_\"']", "", text).lower().split())


def _clean_anchor(text: str) -> str:
    """The words of an anchor: link markup and emphasis out, surrounding quotes off."""
    text = MARKDOWN_LINK.sub(lambda m: m.group(1), clean_inline(text)).replace("**", "").replace("`", "")
    return " ".join(text.split()).strip().strip("'\"")


_GARBLED = re.compile(r"\s[,.;:]|\s(?:to|or|and|of|the)$|^(?:to|or|and|of)\s")
"""An anchor whose inline code the heading path dropped ("Passing to , or")."""


class SetMiner:
    """One pool set's anchors, sections and keyword ranking."""

    def __init__(self, pool_set: PoolSet, flags: Flags) -> None:
        from lab.evaluation.kinds import memory_pipeline

        self.set = pool_set
        self.flags = flags
        self.sections: dict[tuple[str, str], _Section] = {}
        for chunk in pool_set.chunks:
            key = (chunk.doc_slug, chunk.header_path)
            section = self.sections.get(key)
            if section is None:
                section = self.sections[key] = _Section(chunk.doc_slug, chunk.header_path, chunk.anchor, chunk)
            section.chunks.append(chunk)
        self.page_sections: dict[str, list[_Section]] = {}
        for section in self.sections.values():
            self.page_sections.setdefault(section.page, []).append(section)
        self.ordered = list(self.sections.values())
        self.titles_by_slug = {p.doc.slug: p.doc.title for p in pool_set.pages}
        self.headings = Counter(_norm(s.header_path.split(HEADER_SEPARATOR)[-1]) for s in self.ordered)
        self.titles = Counter(_norm(p.doc.title) for p in pool_set.pages)
        # The set's own folder holds no glossary or synonyms: none are read.
        documents = [p.doc for p in pool_set.pages]
        self.pipeline: Any = memory_pipeline(pool_set.folder, flags, documents, pool_set.chunks)

    # --- anchors ---------------------------------------------------------------

    def candidates(self) -> Iterator[_Candidate]:
        """Every minable (kind, anchor, section) of the set, anchors cleaned and filtered."""
        definitions = list(self._definitions())
        # A term defined twice in a set (`--lock` of several commands) names no one description.
        terms = Counter(_norm(d.anchor) for d in definitions)
        for found in (*self._titles(), *self._headings(), *self._links(), *definitions):
            if found.kind == "definition" and terms[_norm(found.anchor)] > 1:
                continue
            if MIN_ANCHOR_CHARS <= len(found.anchor) <= MAX_ANCHOR_CHARS and not _GARBLED.search(found.anchor) \
                    and len(opening(found.section.first.content)) >= MIN_PASSAGE_CHARS:
                yield found

    def _titles(self) -> Iterator[_Candidate]:
        for entry in self.set.pages:
            sections = self.page_sections.get(entry.doc.slug)
            title = _clean_anchor(entry.doc.title)
            if entry.doc.stub or not sections or self.titles[_norm(title)] >= SHARED_HEADING:
                continue
            yield _Candidate("title", title, sections[0], False)

    def _headings(self) -> Iterator[_Candidate]:
        for section in self.ordered:
            parts = section.header_path.split(HEADER_SEPARATOR)
            if len(parts) < 2 or self.headings[_norm(parts[-1])] >= SHARED_HEADING:
                continue  # a page's own title is a `title` pair
            yield _Candidate("heading", _clean_anchor(parts[-1]), section, False)

    def _links(self) -> Iterator[_Candidate]:
        links = CorpusLinks(self.set.pages, self.set.folder)
        for entry in self.set.pages:
            for parsed in entry.page.sections:
                for block in parsed.blocks:
                    if block.kind == "code":
                        continue
                    for match in MARKDOWN_LINK.finditer(block.text):
                        text, target = _clean_anchor(match.group(1)), match.group(2)
                        if URL_SCHEME.match(target) or _norm(text) in GENERIC_LINK_TEXT:
                            continue
                        section = self._link_section(links, entry, target)
                        if section is None or (section.page == entry.doc.slug and section.anchor == parsed.anchor):
                            continue
                        heading = section.header_path.split(HEADER_SEPARATOR)[-1]
                        if _norm(text) in (_norm(heading), _norm(self.titles_by_slug.get(section.page, ""))):
                            continue
                        yield _Candidate("link", text, section, True)

    def _definitions(self) -> Iterator[_Candidate]:
        for entry in self.set.pages:
            for parsed in entry.page.sections:
                section = next((s for s in self.page_sections.get(entry.doc.slug, ()) if s.anchor == parsed.anchor), None)
                if section is None:
                    continue
                blocks = parsed.blocks
                for i, block in enumerate(blocks):
                    if block.kind == "list":
                        for item in block.items or (block.text,):
                            match = _TERM_ITEM.match(item.strip())
                            if match:
                                term = match.group("bold") or match.group("code") or ""
                                yield self._definition(term, match.group("desc"), section)
                    elif block.kind == "para" and i + 1 < len(blocks) and blocks[i + 1].kind == "para":
                        match = _SIGNATURE.match(block.text.strip())
                        if match:  # an API entry: its signature, then its description
                            name = match.group("sig").split("(", 1)[0].strip()
                            yield self._definition(name, blocks[i + 1].text, section)

    @staticmethod
    def _definition(term: str, description: str, section: _Section) -> _Candidate:
        # The description stands for the section: the passage is its heading path and the description.
        described = _Section(section.page, section.header_path, section.anchor,
                             msgspec.structs.replace(section.first, content=description), section.chunks)
        return _Candidate("definition", _clean_anchor(term), described, True)

    def _link_section(self, links: CorpusLinks, entry: CorpusPage, target: str) -> _Section | None:
        found = links.target(Link(target, "markdown", 0), entry)
        sections = self.page_sections.get(found.page.doc.slug) if found.page is not None else None
        if not sections:
            return None
        if not found.fragment:
            return sections[0]
        wanted = {found.fragment, anchor_slug(found.fragment)}
        return next((s for s in sections if s.anchor in wanted), None)

    # --- negatives -------------------------------------------------------------

    def ranked_sections(self, text: str) -> list[_Section]:
        """The sections the keyword ranking (phase 2's chunk index) puts first for `text`."""
        query, _ = self.pipeline.normalise(text, self.flags)
        indexes = self.pipeline.require_indexes()
        hits = indexes.chunks.search_unexplained(query.tokens, limit=SEARCH_DEPTH, lexical=self.flags.lexical)
        out: list[_Section] = []
        for evidence in hits.results:
            chunk = indexes.chunks_by_id.get((evidence.doc_slug, evidence.chunk_index))
            section = self.sections.get((chunk.doc_slug, chunk.header_path)) if chunk is not None else None
            if section is not None and section not in out:
                out.append(section)
        return out

    def group(self, found: _Candidate, options: MiningOptions) -> Group:
        ranked = self.ranked_sections(found.anchor)
        page = found.section.page
        others = [s for s in ranked if s.page != page]
        position = next((i for i, s in enumerate(ranked) if s.page == page and s.header_path == found.section.header_path), None)
        above = sum(1 for s in ranked[: len(ranked) if position is None else position] if s.page != page)
        hard = others[: options.hard_negatives]
        rng = random.Random(f"{options.seed}:{found.key}")
        pool = [s for s in self.ordered if s.page != page and s not in hard]
        randoms = rng.sample(pool, min(options.random_negatives, len(pool)))
        negatives = tuple(s.text(found.with_path) for s in (*hard, *randoms))
        return Group(kind=found.kind, corpus=self.set.name, anchor=found.anchor,
                     positive=found.section.text(found.with_path), page=page,
                     negatives=negatives, hard=len(hard), above=above)


def mine_set(pool_set: PoolSet, flags: Flags, options: MiningOptions) -> tuple[list[Group], Counter[str]]:
    """A fixed sample of at most `options.per_kind` groups per kind; and how many anchors of
    each kind the set had before the sample."""
    miner = SetMiner(pool_set, flags)
    by_kind: dict[str, dict[str, _Candidate]] = {kind: {} for kind in KINDS}
    for found in miner.candidates():
        by_kind[found.kind].setdefault(found.key, found)
    available = Counter({kind: len(found) for kind, found in by_kind.items()})
    groups: list[Group] = []
    for kind in KINDS:
        # The sample: the candidates whose keys hash lowest (stable across runs and orders).
        chosen = sorted(by_kind[kind].items(), key=lambda item: _digest(f"{options.seed}:{item[0]}"))
        groups.extend(miner.group(found, options) for _, found in chosen[: options.per_kind])
    return groups, available


def mine_pool(
    sets: Sequence[PoolSet], flags: Flags, options: MiningOptions, progress: Callable[[str], None] = print,
) -> tuple[list[Group], dict[str, dict[str, int]]]:
    """Every set's groups, and per set the anchors each kind had (before the sample)."""
    groups: list[Group] = []
    available: dict[str, dict[str, int]] = {}
    for pool_set in sets:
        mined, counts = mine_set(pool_set, flags, options)
        groups.extend(mined)
        available[pool_set.name] = {kind: counts[kind] for kind in KINDS}
        taken = Counter(g.kind for g in mined)
        progress(f"{pool_set.name}: " + ", ".join(f"{k} {taken[k]}/{counts[k]}" for k in KINDS))
    return groups, available


def is_held_out(group: Group, every: int = 20) -> bool:
    """About one group in `every`, by its key: the slice training never sees (checks, fp32 vs int8)."""
    return int(group.key[:8], 16) % every == 0
