"""Names a link points at: a section other pages link to by a name explains that name (issue 42).

Documentation links a name to the place that explains it: Pinia's plugins page writes
`[store.$onAction](./actions.md#subscribing-to-actions)`, Starlight's component pages link
`` [`<Card>`](/components/cards/) ``, a Sphinx role's reference becomes such a link. The section
a link reaches, when the link's text is one name (the shape an inline code span or a strong name
has, `service/ingest/identifiers.py`), is where the site's authors send a reader who wants that
name: it **defines** the name (`Chunk.linked_names`), as a heading naming it does, and outranks the
pages that only show it, the linking page among them.

A link reaching a page without a fragment names the page's first section. Links inside fenced
code, and links that reach no page of the corpus, count for nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import msgspec

from service.domain.types import Chunk
from service.ingest.identifiers import MARKDOWN_LINK, linked_name
from service.ingest.links import CorpusLinks
from service.ingest.markdown import CorpusPage
from service.ingest.parse import URL_SCHEME, Link, anchor_slug
from service.ingest.scan import fenced_lines

MAX_PER_CHUNK = 32
"""Distinct linked names kept per section (an API index links hundreds of names, each elsewhere)."""

def markdown_links(markdown: str) -> list[tuple[str, str]]:
    """(text, target) of each inline link outside fenced code whose target has no scheme."""
    return [
        (match.group("text"), match.group("target"))
        for line, kind in fenced_lines(markdown) if kind == "text"
        for match in MARKDOWN_LINK.finditer(line)
        if not URL_SCHEME.match(match.group("target"))
    ]


def named_links(markdown: str) -> list[tuple[str, str]]:
    """(name, target) of each link outside fenced code whose text is one name."""
    return [(name, target) for text, target in markdown_links(markdown) if (name := linked_name(text)) is not None]


def with_linked_names(corpus: Sequence[CorpusPage], chunks: Sequence[Chunk], known: CorpusLinks) -> list[Chunk]:
    """`chunks`, each with the names the corpus's links (`known`: where they lead) point at it by
    (`Chunk.linked_names`)."""
    pages = {entry.doc.slug: entry for entry in corpus}
    by_page: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        by_page[chunk.doc_slug].append(chunk)
    linked: dict[tuple[str, int], dict[str, None]] = defaultdict(dict)
    for chunk in chunks:
        entry = pages.get(chunk.doc_slug)
        if entry is None:
            continue
        for name, target in named_links(chunk.content):
            reached = known.target(Link(target, "markdown", 0), entry)
            if reached.page is None:
                continue
            section = _section(by_page.get(reached.page.doc.slug, []), reached.fragment)
            if section is not None:
                linked[(section.doc_slug, section.chunk_index)].setdefault(name)
    return [
        msgspec.structs.replace(chunk, linked_names=tuple(list(names)[:MAX_PER_CHUNK]))
        if (names := linked.get((chunk.doc_slug, chunk.chunk_index))) else chunk
        for chunk in chunks
    ]


def _section(chunks: Sequence[Chunk], fragment: str) -> Chunk | None:
    """The first chunk of the page's section `fragment` ("" : the page's first chunk)."""
    if not chunks:
        return None
    if not fragment:
        return min(chunks, key=lambda c: c.chunk_index)
    wanted = {fragment, anchor_slug(fragment)}
    return min((c for c in chunks if c.anchor in wanted), key=lambda c: c.chunk_index, default=None)
