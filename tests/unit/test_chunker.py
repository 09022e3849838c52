"""Chunker: header paths, determinism, size cap with the real tokenizer, code
blocks and table rows intact, sentence split of an over-long paragraph."""

from __future__ import annotations

import hashlib

import pytest

from service.domain.types import Document
from service.ingest.chunker import chunk_document
from service.ingest.tokens import TokenCounter, get_token_counter


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return get_token_counter()


def doc(content: str, title: str = "Quick Links") -> Document:
    return Document(
        slug="widgets/quick-links",
        category="widgets",
        title=title,
        content=content,
        keywords=("links", "shortcuts"),
        content_hash="h",
    )


QUICK_LINKS = """---
title: Quick Links
category: widgets
keywords: [links, shortcuts]
---
# Quick Links

Quick Links holds your pinned shortcuts to notes, workspaces and web addresses.

## Adding links

Click the plus button on the widget. Pick a note, a workspace or paste an address.

The new link appears at the end of the list.

## Editing links

Right-click a link and choose Edit to change its label or target.

### Keyboard

Press `e` while a link is focused.

## Removing links

Drag a link out of the widget, or choose Remove from its menu.
"""


def test_header_paths_start_with_title_and_follow_hierarchy() -> None:
    chunks = chunk_document(doc(QUICK_LINKS))
    assert [c.header_path for c in chunks] == [
        "Quick Links",
        "Quick Links > Adding links",
        "Quick Links > Editing links",
        "Quick Links > Editing links > Keyboard",
        "Quick Links > Removing links",
    ]
    # Heading lines are not content (header_path carries them); front matter is gone.
    assert all(not c.content.startswith("#") for c in chunks)
    assert all("category: widgets" not in c.content for c in chunks)
    # Two short paragraphs of one section are merged, not left as one-liners.
    assert "plus button" in chunks[1].content and "end of the list" in chunks[1].content


def test_metadata_indexes_hashes_and_token_counts(counter: TokenCounter) -> None:
    chunks = chunk_document(doc(QUICK_LINKS))
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.doc_slug == "widgets/quick-links"
        assert c.category == "widgets" and c.title == "Quick Links"
        assert c.keywords == ("links", "shortcuts")
        assert c.chunk_hash == hashlib.md5(c.content.encode()).hexdigest()
        assert c.token_count == counter.count(c.content)
        assert c.chunk_id == f"widgets/quick-links#chunk-{c.chunk_index}"


def test_deterministic_across_runs() -> None:
    first = chunk_document(doc(LONG_DOC), max_tokens=120)
    second = chunk_document(doc(LONG_DOC), max_tokens=120)
    assert first == second
    assert [c.chunk_hash for c in first] == [c.chunk_hash for c in second]


def test_title_without_hash_heading_uses_document_title() -> None:
    chunks = chunk_document(doc("Intro text.\n\n## Setup\n\nDo this.", title="Navigator"))
    assert [c.header_path for c in chunks] == ["Navigator", "Navigator > Setup"]


def test_editing_one_section_changes_only_its_chunk() -> None:
    before = chunk_document(doc(QUICK_LINKS))
    after = chunk_document(doc(QUICK_LINKS.replace("change its label", "rename its label")))
    changed = [a.chunk_index for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [2]


SENTENCE = "The widget shows each pinned link with its icon and label in the order you chose. "
CODE = (
    "```python\n"
    + "\n".join(f"value_{i} = compute_thing({i})  # step" for i in range(80))
    + "\n```"
)
TABLE = "| Shortcut | Action |\n|---|---|\n" + "\n".join(
    f"| Ctrl+{i} | Open quick link number {i} in a new tab |" for i in range(60)
)
LONG_DOC = f"""# Quick Links

Summary line.

## Long paragraph

{SENTENCE * 40}

## Code

Before the code.

{CODE}

After the code.

## Table

{TABLE}

## Small

A. B. C.
"""


@pytest.mark.parametrize("cap", [64, 120, 450])
def test_cap_respected_except_oversized_code(cap: int, counter: TokenCounter) -> None:
    chunks = chunk_document(doc(LONG_DOC), max_tokens=cap)
    code_tokens = counter.count(CODE)
    for c in chunks:
        assert c.token_count == counter.count(c.content)
        if c.token_count > cap:
            # Only an oversized fenced code block may exceed the cap, and then alone.
            assert c.content == CODE and code_tokens > cap


def test_code_block_never_split() -> None:
    for cap in (64, 120, 450):
        chunks = chunk_document(doc(LONG_DOC), max_tokens=cap)
        holding = [c for c in chunks if "```" in c.content]
        assert len(holding) == 1
        assert CODE in holding[0].content
        assert holding[0].header_path == "Quick Links > Code"


def test_hash_inside_code_block_is_not_a_heading() -> None:
    md = "# T\n\n## Real\n\n```bash\n# comment, not a heading\necho hi\n```\n"
    chunks = chunk_document(doc(md, title="T"))
    assert [c.header_path for c in chunks] == ["T > Real"]
    assert "# comment, not a heading" in chunks[0].content


def test_table_split_between_rows_with_header_repeated(counter: TokenCounter) -> None:
    chunks = [c for c in chunk_document(doc(LONG_DOC), max_tokens=120) if "| Shortcut" in c.content]
    assert len(chunks) > 1
    rows = TABLE.split("\n")
    seen: list[str] = []
    for c in chunks:
        lines = c.content.split("\n")
        assert lines[:2] == rows[:2]  # header + separator repeated
        assert all(line in rows for line in lines)  # every line is a whole row
        assert c.token_count <= 120
        seen.extend(lines[2:])
    assert seen == rows[2:]  # every row exactly once, in order


def test_long_paragraph_split_at_sentences() -> None:
    chunks = [
        c
        for c in chunk_document(doc(LONG_DOC), max_tokens=120)
        if c.header_path.endswith("Long paragraph")
    ]
    assert len(chunks) > 1
    for c in chunks:
        assert c.token_count <= 120
        assert c.content.startswith("The widget") and c.content.endswith("chose.")
    # Nothing lost, nothing duplicated.
    assert " ".join(c.content for c in chunks) == (SENTENCE * 40).strip()


def test_single_enormous_sentence_is_cut_under_cap() -> None:
    words = " ".join(f"word{i}" for i in range(400))
    chunks = chunk_document(doc(f"# T\n\n{words}", title="T"), max_tokens=64)
    assert len(chunks) > 1
    assert all(c.token_count <= 64 for c in chunks)
    assert " ".join(c.content for c in chunks).split() == words.split()


def test_list_items_kept_whole() -> None:
    items = [f"- Item {i}: open the menu and choose option {i} to continue." for i in range(40)]
    chunks = chunk_document(doc("# T\n\n" + "\n".join(items), title="T"), max_tokens=64)
    assert len(chunks) > 1
    lines = [line for c in chunks for line in c.content.split("\n")]
    assert lines == items


def test_empty_document_has_no_chunks() -> None:
    assert chunk_document(doc("---\ntitle: x\n---\n# Title\n\n")) == []


def test_rejects_tiny_cap() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_document(doc(QUICK_LINKS), max_tokens=4)
