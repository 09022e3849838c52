"""Training pairs mined from the corpus itself (no labels, no LLM).

Each pair is (something a user might say about a page, the passage the
service embeds for it):

- a section's heading → that section (as the indexer embeds it: "breadcrumb: text");
- a page title → the page's first section;
- a page summary → the page's first section;
- a page keyword / alias → the page's first section.

The labelled query sets (bench/queries) are never used: they measure the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import NamedTuple, TypeVar

from service.domain.types import Chunk, Document
from service.ingest.chunker import HEADER_SEPARATOR
from service.ingest.representations import passage_context

T = TypeVar("T")

# Long enough for the gist of a section; training cuts at the model's
# max_seq_length anyway, this only keeps the tokenizer's work small.
POSITIVE_CHARS = 700
MIN_ANCHOR_CHARS = 3


class Pair(NamedTuple):
    anchor: str
    positive: str
    page: str
    """The page both come from: a batch never holds two pairs of one page
    (the other would be a false in-batch negative)."""


def passage(chunk: Chunk) -> str:
    """The model input the indexer builds for a chunk body, cut for training."""
    return f"{passage_context(chunk.header_path, chunk.title)}: {chunk.content}"[:POSITIVE_CHARS]


def mine_pairs(documents: Sequence[Document], chunks: Sequence[Chunk]) -> list[Pair]:
    first: dict[str, Chunk] = {}
    for chunk in sorted(chunks, key=lambda c: (c.doc_slug, c.chunk_index)):
        first.setdefault(chunk.doc_slug, chunk)
    pairs: list[Pair] = []
    seen: set[tuple[str, str]] = set()

    def add(anchor: str, positive: str, page: str) -> None:
        anchor = " ".join(anchor.split())
        key = (anchor.lower(), positive)
        if len(anchor) >= MIN_ANCHOR_CHARS and positive.strip() and key not in seen:
            seen.add(key)
            pairs.append(Pair(anchor, positive, page))

    for chunk in chunks:
        if not chunk.content.strip():
            continue
        heading = chunk.header_path.split(HEADER_SEPARATOR)[-1] if chunk.header_path else chunk.title
        add(heading, passage(chunk), chunk.doc_slug)
    for doc in documents:
        opening = first.get(doc.slug)
        if opening is None or not opening.content.strip():
            continue
        target = passage(opening)
        add(doc.title, target, doc.slug)
        if doc.summary:
            add(doc.summary, target, doc.slug)
        for keyword in doc.keywords:
            add(keyword, target, doc.slug)
    return pairs


def batches(
    items: Sequence[T], size: int, seed: int = 0, page_of: Callable[[T], str] = attrgetter("page"),
) -> list[list[T]]:
    """Shuffled batches of `size` in which every page (`page_of` an item) appears at most once."""
    import random

    order = list(items)
    random.Random(seed).shuffle(order)
    out: list[list[T]] = []
    open_batches: list[tuple[list[T], set[str]]] = []
    for item in order:
        page = page_of(item)
        for batch, pages in open_batches:
            if page not in pages:
                batch.append(item)
                pages.add(page)
                if len(batch) == size:
                    out.append(batch)
                    open_batches.remove((batch, pages))
                break
        else:
            open_batches.append(([item], {page}))
            if size == 1:
                out.append(open_batches.pop()[0])
    # Leftovers: batches of at least two items still have a negative each.
    out.extend(batch for batch, _ in open_batches if len(batch) >= 2)
    return out
