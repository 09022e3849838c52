"""Heading-aware Markdown chunker (issue 4).

Order of splitting: headings (`#`, `##`, `###`, also inside outliner bullets)
→ blocks (paragraph, list, table, fenced code) → list items / table rows /
sentences → (last resort, for a single sentence longer than the cap)
token-boundary pieces. Sections and blocks come from the page's one
markdown-it parse (service/ingest/parse.py). Small neighbouring pieces of the
same section are then packed greedily back together up to the cap, so a chunk
is a whole section whenever the section fits.

Decisions (documented here because callers rely on them):
- `header_path` starts with the document title (the `# Title` heading, or
  `doc.title` when the content has none) and joins the open headings with
  " > ", e.g. "Quick Links > Editing links". Text before the first `##` (the
  one-line summary) gets just "Quick Links". `anchor` is the URL fragment of
  the section's own heading ("" before the first heading).
- The heading line itself is NOT in `content`: `header_path` carries it, and
  the embedder adds it back as context. So `chunk_hash` (MD5 of `content`)
  does not change when only a heading is renamed; a seeder must compare
  `header_path` too (the indexer does, see indexer.py).
- A fenced code block is never cut; one larger than the cap becomes its own
  chunk, over the cap. A table is split only between rows, and every part
  repeats the header row so it still reads as a table. A table row is never cut.
- `####` and deeper headings stay in the text of their `###` section.
- Deterministic: pure function of (content, max_tokens, tokenizer).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from service.domain.types import Chunk, Document
from service.ingest.parse import Block, page_of, sentences
from service.ingest.tokens import TokenCounter, get_token_counter

DEFAULT_MAX_TOKENS = 450
HEADER_SEPARATOR = " > "

@dataclass(frozen=True, slots=True)
class _Piece:
    text: str
    joiner: str  # separator to the previous piece when both land in one chunk


def chunk_document(
    doc: Document, max_tokens: int = DEFAULT_MAX_TOKENS, counter: TokenCounter | None = None
) -> list[Chunk]:
    """Split one document into chunks of at most `max_tokens` model word pieces."""
    if max_tokens < 16:
        raise ValueError(f"max_tokens must be >= 16, got {max_tokens}")
    counter = counter or get_token_counter()
    chunks: list[Chunk] = []
    title = doc.title.strip()
    for section in page_of(doc.content).sections:
        crumbs = (title if p is None else p for p in section.path)
        header_path = HEADER_SEPARATOR.join(p for p in crumbs if p)
        for text in _pack(_pieces(section.blocks, max_tokens, counter), max_tokens, counter):
            chunks.append(
                Chunk(
                    doc_slug=doc.slug,
                    category=doc.category,
                    title=doc.title,
                    header_path=header_path,
                    chunk_index=len(chunks),
                    content=text,
                    keywords=doc.keywords,
                    chunk_hash=content_hash(text),
                    token_count=counter.count(text),
                    anchor=section.anchor,
                )
            )
    return chunks


def content_hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


# --- step 3: blocks → pieces no larger than the cap (except code / one row) --


def _pieces(blocks: tuple[Block, ...], cap: int, counter: TokenCounter) -> list[_Piece]:
    pieces: list[_Piece] = []
    for block in blocks:
        if block.kind == "code" or counter.count(block.text) <= cap:
            parts, joiner = [block.text], "\n\n"
        elif block.kind == "table":
            parts, joiner = _table_parts(block.text, cap, counter), "\n\n"
        elif block.kind == "list":
            parts, joiner = list(block.items) or [block.text], "\n"
            parts = [p for item in parts for p in _fit(item, cap, counter)]
        else:
            parts, joiner = _fit(block.text, cap, counter), " "
        pieces.append(_Piece(parts[0], "\n\n"))
        pieces.extend(_Piece(p, joiner) for p in parts[1:])
    return pieces


def _fit(text: str, cap: int, counter: TokenCounter) -> list[str]:
    """Sentences of a paragraph; a sentence still over the cap is cut on token boundaries."""
    if counter.count(text) <= cap:
        return [text]
    out: list[str] = []
    for sentence in sentences(text):
        out.extend(
            [sentence] if counter.count(sentence) <= cap else _hard_split(sentence, cap, counter)
        )
    return out


def _hard_split(text: str, cap: int, counter: TokenCounter) -> list[str]:
    """Last resort for one enormous sentence: cut at word starts, `cap` pieces at a time."""
    offsets = counter.offsets(text)
    parts: list[str] = []
    start_tok = 0
    while start_tok < len(offsets):
        end_tok = min(start_tok + cap, len(offsets))
        if end_tok < len(offsets):
            # Back off to a token that starts a word (preceded by whitespace).
            cut = end_tok
            while cut > start_tok + 1 and not text[offsets[cut][0] - 1].isspace():
                cut -= 1
            end_tok = cut if cut > start_tok + 1 else end_tok
        begin = offsets[start_tok][0]
        end = offsets[end_tok][0] if end_tok < len(offsets) else len(text)
        parts.append(text[begin:end].strip())
        start_tok = end_tok
    return [p for p in parts if p]


def _table_parts(text: str, cap: int, counter: TokenCounter) -> list[str]:
    """Groups of whole rows, each group under the repeated header row + separator."""
    rows = text.split("\n")
    head = rows[:2] if len(rows) > 1 and set(rows[1].strip()) <= set("|-: ") else rows[:1]
    body = rows[len(head) :]
    if not body:
        return ["\n".join(head)]

    def rows_text(i: int, j: int) -> str:
        return "\n".join([*head, *body[i:j]])

    # A single row over the cap stays whole.
    sizes = [counter.count(row) for row in body]
    groups = _groups(len(body), rows_text, sizes, counter.count("\n".join(head)), cap, counter)
    return [rows_text(i, j) for i, j in groups]


# --- step 4: pack pieces greedily up to the cap -------------------------------


def _pack(pieces: list[_Piece], cap: int, counter: TokenCounter) -> list[str]:
    def text(i: int, j: int) -> str:
        return pieces[i].text + "".join(p.joiner + p.text for p in pieces[i + 1 : j])

    sizes = [counter.count(p.text) for p in pieces]
    return [text(i, j) for i, j in _groups(len(pieces), text, sizes, 0, cap, counter)]


def _groups(
    n: int, text: Callable[[int, int], str], sizes: list[int], base: int, cap: int, counter: TokenCounter
) -> Iterator[tuple[int, int]]:
    """Items 0..n cut into groups [i, j), each the longest run from i whose `text(i, j)` fits
    `cap` tokens (one item at least): what adding items one by one while the text fits gives,
    without counting the growing text once per item (a page of 250,000 short sentences took
    minutes). Each end is guessed from the items' own counts (`base` + their sum: exact for the
    model's WordPiece tokenizer, which splits at the whitespace joining items) and confirmed
    with two counts: the group fits and one more item does not. A guess that is not confirmed
    falls back to a doubling, then binary, search; both assume a longer text never has fewer
    tokens."""

    def fits(i: int, j: int) -> bool:
        return counter.count(text(i, j)) <= cap

    i = 0
    while i < n:
        j, total = i + 1, base + sizes[i]
        while j < n and total + sizes[j] <= cap:
            total += sizes[j]
            j += 1
        if not ((j == i + 1 or fits(i, j)) and (j == n or not fits(i, j + 1))):
            j = _longest_fitting(i, n, fits)
        yield i, j
        i = j


def _longest_fitting(i: int, n: int, fits: Callable[[int, int], bool]) -> int:
    """The largest j in (i, n] with fits(i, j), or i + 1: doubling steps, then bisection."""
    good, step = i + 1, 1
    while good + step <= n and fits(i, good + step):
        good, step = good + step, step * 2
    bad = min(good + step, n + 1)  # fits(i, bad) is false, or bad is past the end
    while bad - good > 1:
        middle = (good + bad) // 2
        if fits(i, middle):
            good = middle
        else:
            bad = middle
    return good
