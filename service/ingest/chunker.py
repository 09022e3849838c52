"""Heading-aware Markdown chunker (issue 4).

Order of splitting: headings (`#`, `##`, `###`) → blocks (paragraph, list,
table, fenced code) → list items / table rows / sentences → (last resort, for a
single sentence longer than the cap) token-boundary pieces. Small neighbouring
pieces of the same section are then packed greedily back together up to the cap,
so a chunk is a whole section whenever the section fits.

Decisions (documented here because callers rely on them):
- `header_path` starts with the document title (the `# Title` heading, or
  `doc.title` when the content has none) and joins the open headings with
  " > ", e.g. "Quick Links > Editing links". Text before the first `##` (the
  one-line summary) gets just "Quick Links".
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
import re
from dataclasses import dataclass

from service.domain.types import Chunk, Document
from service.ingest.tokens import TokenCounter, get_token_counter

DEFAULT_MAX_TOKENS = 450
HEADER_SEPARATOR = " > "

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_HEADING = re.compile(r"^ {0,3}(#{1,3})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+")
_TABLE_ROW = re.compile(r"^ {0,3}\|")
# A sentence ends at . ! ? (optionally closed by a quote/bracket) followed by
# whitespace and something that can start a sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[`*_])")


@dataclass(frozen=True, slots=True)
class _Block:
    kind: str  # "para" | "list" | "table" | "code"
    text: str


@dataclass(frozen=True, slots=True)
class _Section:
    path: tuple[str, ...]
    blocks: tuple[_Block, ...]


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
    for section in _sections(strip_front_matter(doc.content), doc.title):
        header_path = HEADER_SEPARATOR.join(section.path)
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
                )
            )
    return chunks


def content_hash(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def strip_front_matter(markdown: str) -> str:
    text = markdown.replace("\r\n", "\n").replace("\r", "\n")
    return _FRONT_MATTER.sub("", text, count=1)


# --- step 1: headings → sections -------------------------------------------


def _sections(markdown: str, title: str) -> list[_Section]:
    path: list[str] = [title.strip()]
    sections: list[_Section] = []
    lines: list[str] = []
    fence: str | None = None

    def close() -> None:
        blocks = _blocks(lines)
        if blocks:
            sections.append(_Section(tuple(p for p in path if p), tuple(blocks)))
        lines.clear()

    for line in markdown.split("\n"):
        fence = _fence_state(line, fence)
        heading = None if fence is not None else _HEADING.match(line)
        if heading is None:
            lines.append(line)
            continue
        close()
        level = len(heading.group(1))
        # Level 1 is the root (title); level n keeps levels < n and replaces n.
        del path[level - 1 :]
        while len(path) < level - 1:
            path.append("")  # a skipped level (### under #) leaves no empty crumb
        path.append(heading.group(2).strip())
    close()
    return sections


def _fence_state(line: str, fence: str | None) -> str | None:
    """Track an open fenced code block; returns the open fence marker or None."""
    match = _FENCE.match(line)
    if match is None:
        return fence
    marker = match.group(1)
    if fence is None:
        return marker
    # A fence closes with the same character, at least as long, and nothing after it.
    if marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip()[len(marker) :]:
        return None
    return fence


# --- step 2: section lines → blocks ------------------------------------------


def _blocks(lines: list[str]) -> list[_Block]:
    blocks: list[_Block] = []
    current: list[str] = []
    kind = "para"
    fence: str | None = None

    def flush() -> None:
        text = "\n".join(current).strip("\n")
        if text.strip():
            blocks.append(_Block(kind, text))
        current.clear()

    for line in lines:
        if fence is not None:
            current.append(line)
            fence = _fence_state(line, fence)
            if fence is None:
                flush()
                kind = "para"
            continue
        if _FENCE.match(line):
            flush()
            kind = "code"
            current.append(line)
            fence = _fence_state(line, None)
            continue
        if not line.strip():
            flush()
            kind = "para"
            continue
        is_row = bool(_TABLE_ROW.match(line))
        if current and (kind == "table") != is_row:
            flush()  # a table starts or ends without a blank line
        if not current:
            kind = "table" if is_row else ("list" if _LIST_ITEM.match(line) else "para")
        current.append(line)
    flush()  # an unclosed fence runs to the end of the section, whole
    return blocks


# --- step 3: blocks → pieces no larger than the cap (except code / one row) --


def _pieces(blocks: tuple[_Block, ...], cap: int, counter: TokenCounter) -> list[_Piece]:
    pieces: list[_Piece] = []
    for block in blocks:
        if block.kind == "code" or counter.count(block.text) <= cap:
            parts, joiner = [block.text], "\n\n"
        elif block.kind == "table":
            parts, joiner = _table_parts(block.text, cap, counter), "\n\n"
        elif block.kind == "list":
            parts, joiner = _list_items(block.text), "\n"
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
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
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


def _list_items(text: str) -> list[str]:
    items: list[list[str]] = []
    for line in text.split("\n"):
        if _LIST_ITEM.match(line) or not items:
            items.append([line])
        else:
            items[-1].append(line)  # continuation line of the item above
    return ["\n".join(item) for item in items]


def _table_parts(text: str, cap: int, counter: TokenCounter) -> list[str]:
    """Groups of whole rows, each group under the repeated header row + separator."""
    rows = text.split("\n")
    head = rows[:2] if len(rows) > 1 and set(rows[1].strip()) <= set("|-: ") else rows[:1]
    body = rows[len(head) :]
    parts: list[str] = []
    group: list[str] = []
    for row in body:
        if group and counter.count("\n".join([*head, *group, row])) > cap:
            parts.append("\n".join([*head, *group]))
            group = []
        group.append(row)  # a single row over the cap stays whole
    if group or not parts:
        parts.append("\n".join([*head, *group]))
    return parts


# --- step 4: pack pieces greedily up to the cap -------------------------------


def _pack(pieces: list[_Piece], cap: int, counter: TokenCounter) -> list[str]:
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        if not current:
            current = piece.text
            continue
        candidate = current + piece.joiner + piece.text
        if counter.count(candidate) <= cap:
            current = candidate
        else:
            chunks.append(current)
            current = piece.text
    if current:
        chunks.append(current)
    return chunks
