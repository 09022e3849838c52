"""Bounded time per page (issue 33 item 2; docs/operations/seeding-safety.md).

Every step that grew faster than its input on some generated page is checked by what the
algorithm does, not by a clock: the linear scans give exactly what the patterns they replace
gave (compared on generated text), a failed start is never retried inside the span it read,
and doubling a hostile page at most about doubles a deterministic work counter (the Python
steps traced while parsing it, the characters the chunker hands to the tokenizer). The regexes whose
repair is structural (no counter sees inside `re`) get a generous budget instead: those
inputs took minutes or never finished before.
"""

from __future__ import annotations

import os
import random
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from service.domain.types import Document
from service.ingest import dialects, parse
from service.ingest.chunker import chunk_document
from service.ingest.dialects import Anchors, AnchorStyle, Dialect, detect_dialect
from service.ingest.scan import Scan, code_spans
from service.ingest.tokens import TokenCounter, get_token_counter

ROOT = Path(__file__).resolve().parents[2]
CORPORA = [ROOT / "seeds", *sorted(p for p in (ROOT / "tests" / "corpora").iterdir() if p.is_dir())]

SCANS: dict[str, Scan] = {
    name: value for module in (parse, dialects) for name, value in vars(module).items() if isinstance(value, Scan)
}
PIECES = ["[", "]", "(", ")", "!", "^", "#", "{", "}", "\n", " ", "\t", "a", "{{embed", "{{embed ", "`", "``",
          "<a ", "<A\t", "id=", "name=", '"', "'", ">", ":", "=", "\\", "[[", "]]", "]("]


def _generated(count: int, seed: int = 33) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 16))) for _ in range(count)]


def test_every_scan_is_listed() -> None:
    assert {"_WIKILINK", "_TAG_WIKILINK", "_EMBED", "_MACRO_EMBED", "_IMAGE", "_FOOTNOTE_REF",
            "_HTML_ANCHOR"} <= set(SCANS)


@pytest.mark.parametrize("name", sorted(SCANS))
def test_a_scan_finds_what_its_pattern_finds(name: str) -> None:
    scan = SCANS[name]
    for text in _generated(20_000):
        expected = [(m.span(), m.groups()) for m in scan.pattern.finditer(text)]
        assert [(m.span(), m.groups()) for m in scan.finditer(text)] == expected, repr(text)
        assert scan.sub("<>", text) == scan.pattern.sub("<>", text), repr(text)


def test_code_spans_are_the_inline_code_regex() -> None:
    regex = re.compile(r"(`+)(.+?)\1", re.DOTALL)
    rnd = random.Random(7)
    for text in _generated(5_000) + ["".join(rnd.choice("``a") for _ in range(30)) for _ in range(5_000)]:
        assert list(code_spans(text)) == [m.span() for m in regex.finditer(text)], repr(text)


class _Recording:
    """A pattern that records the calls made on it (what a Scan tried)."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.spans: list[tuple[int, int]] = []
        self.matches = 0

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        found = self.pattern.search(text, pos)
        if found is not None:
            self.spans.append(found.span())
        return found

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        self.matches += 1
        return self.pattern.match(text, pos)


@pytest.mark.parametrize(("name", "unit"), [("_WIKILINK", "[["), ("_TAG_WIKILINK", "#[["), ("_EMBED", "![["),
                                            ("_IMAGE", "![a]("), ("_FOOTNOTE_REF", "[^"),
                                            ("_MACRO_EMBED", "{{embed [[a"), ("_HTML_ANCHOR", "<a b=")])
def test_a_failed_start_is_not_retried_inside_its_span(name: str, unit: str) -> None:
    """A line of 10,000 openers that never close: the plain pattern starts 10,000 scans to
    the line's end; the Scan tries one start, since its span covers every later one."""
    head, pattern = _Recording(SCANS[name].head), _Recording(SCANS[name].pattern)
    scan = Scan(pattern, head)  # type: ignore[arg-type]
    text = unit * 10_000
    assert list(scan.finditer(text)) == []
    assert pattern.matches == 1
    assert head.spans == [(0, len(text))]


def _reference_anchors(style: AnchorStyle, headings: list[tuple[str, str | None]]) -> list[str]:
    """The anchors as the generators number them, one lookup per number tried."""
    used: set[str] = set()
    out: list[str] = []
    for text, explicit in headings:
        if explicit:
            used.add(explicit)
            out.append(explicit)
            continue
        anchor = base = Anchors(style).slug(text)
        if style is AnchorStyle.mkdocs:
            while anchor in used or not anchor:
                match = re.match(r"^(.*)_([0-9]+)$", anchor)
                anchor = f"{match.group(1)}_{int(match.group(2)) + 1}" if match else f"{anchor}_1"
        else:
            number = 1
            while anchor in used:
                anchor, number = f"{base}-{number}", number + 1
        used.add(anchor)
        out.append(anchor)
    return out


@pytest.mark.parametrize("style", [AnchorStyle.mkdocs, AnchorStyle.vitepress])
def test_duplicate_heading_anchors_are_numbered_as_the_generators_number_them(style: AnchorStyle) -> None:
    rnd = random.Random(5)
    names = ["a", "a_1", "a_2", "a-1", "a 1", "", "_1", "b", "a_1_1", "a-2"]
    for _ in range(3_000):
        headings = [(rnd.choice(names), rnd.choice([None] * 6 + ["a", "a_2", "a-1"]))
                    for _ in range(rnd.randint(1, 12))]
        anchors = Anchors(style)
        assert [anchors.add(t, e) for t, e in headings] == _reference_anchors(style, headings), headings


def _steps(work: Callable[[], object]) -> int:
    """Python calls, lines and returns run by `work` (sys.settrace): deterministic, whatever
    the load, and it counts the iterations of a loop, which a call count would not."""
    count = 0

    def trace(_frame: FrameType, _event: str, _arg: Any) -> Any:
        nonlocal count
        count += 1
        return trace

    sys.settrace(trace)
    try:
        work()
    finally:
        sys.settrace(None)
    return count


def _line(unit: str, head: str = "# T\n\n") -> Callable[[int], str]:
    return lambda n: head + unit * (n // len(unit)) + "\n"


HOSTILE: dict[str, tuple[Callable[[int], str], Dialect] | tuple[Callable[[int], str], Dialect, bool]] = {
    "[[ on a line": (_line("[["), Dialect.markdown),
    "[ on a line": (_line("["), Dialect.markdown),
    "[^ with a footnote defined": (_line("[^", "# T\n\n[^1]: x\n\n"), Dialect.markdown),
    "^[ (inline footnotes)": (_line("^["), Dialect.markdown),
    "![a]( on a line": (_line("![a]("), Dialect.markdown),
    "![a](b){ on a line": (_line("![a](b){"), Dialect.markdown),
    "<a  on a line": (_line("<a b="), Dialect.markdown),
    "{{cloze  on a line": (_line("{{cloze a "), Dialect.markdown),
    "{{embed [[ on a line": (_line("{{embed [[a"), Dialect.markdown),
    "backticks after a word": (_line("`", "# T\n\na"), Dialect.markdown),
    "equal headings (MkDocs)": (lambda n: "# T\n\n" + "## h\n\nx\n\n" * (n // 10), Dialect.mkdocs),
    "equal headings (VitePress)": (lambda n: "# T\n\n" + "## h\n\nx\n\n" * (n // 10), Dialect.vitepress),
    "a link-list item of [": (_line("[a", "# T\n\n- "), Dialect.vitepress),
    "JSX tags never closed (MDX)": (_line("<A{\n"), Dialect.starlight, True),
    "a JSX tag never closed, then lines (MDX)": (_line("a\n", "# T\n\n<Aside\n"), Dialect.starlight, True),
}


STEPS_PER_CHAR = 400
"""Traced steps per character a parse may take: the heaviest linear page here (a heading
every 10 characters) takes 270; before the repair `[[` took 865, `[^` 9,000 and rising."""


@pytest.mark.parametrize("name", list(HOSTILE))
def test_doubling_a_hostile_page_about_doubles_the_parse_work(name: str) -> None:
    page, dialect, *mdx = HOSTILE[name]
    small = _steps(lambda: parse.parse_page(page(4_000), dialect, *mdx))
    large = _steps(lambda: parse.parse_page(page(8_000), dialect, *mdx))
    assert large <= 2.2 * small, (small, large)  # quadratic work would be 4x
    assert large <= STEPS_PER_CHAR * len(page(8_000)), large


class _CountingCounter(TokenCounter):
    """The model's tokenizer, counting the characters it is given."""

    def __init__(self) -> None:
        super().__init__(get_token_counter().model_dir)
        self.chars = 0

    def count(self, text: str) -> int:
        self.chars += len(text)
        return super().count(text)


CHUNKED: dict[str, Callable[[int], str]] = {
    "short sentences": lambda n: "# T\n\n" + "Ab. " * (n // 4),
    "list items": lambda n: "# T\n\n" + "- a\n" * (n // 4),
    "table rows": lambda n: "# T\n\n|a|b|\n|-|-|\n" + "|x|y|\n" * (n // 6),
    "code blocks": lambda n: "# T\n\n" + "```\nx\n```\n\n" * (n // 12),
}


@pytest.mark.parametrize("name", list(CHUNKED))
def test_chunking_tokenizes_each_character_a_few_times(name: str) -> None:
    """Packing used to count the growing chunk once per piece: ~225 times each character of
    a page of short sentences. Now a chunk's end is guessed from the pieces' own counts and
    confirmed with two counts."""
    for size in (20_000, 40_000):
        content = CHUNKED[name](size)
        counter = _CountingCounter()
        chunks = chunk_document(Document(slug="t", category="c", title="T", content=content, keywords=(),
                                         content_hash="h"), counter=counter)
        assert len(chunks) > 1
        assert counter.chars <= 8 * len(content), (size, counter.chars)


@pytest.mark.parametrize(("name", "work"), [
    # 22 of these took 12 ms and each one more doubled it: 60 would take centuries.
    ("attribute list of quoted values", lambda: dialects.strip_attr_lists("{" + ' a="' * 60 + " x")),
    ("heading of 100,000 spaces", lambda: dialects.heading_id("a" + " " * 100_000 + "b")),
    ("inline ids after 100,000 spaces", lambda: dialects.inline_ids(" " * 100_000 + "x{")),
    ("container line of 100,000 spaces", lambda: dialects._CONTAINER.match("::: tip" + " " * 100_000 + "x")),
    ("JSX attribute of 100,000 letters", lambda: list(dialects._JSX_ATTR.finditer("a" * 100_000))),
    ("cloze of 50,000 hint marks", lambda: parse.clean_inline("{{cloze a " + "\\\\" * 50_000 + "{}}")),
    ("inline code of 100,000 backticks", lambda: parse.clean_inline("a" + "`" * 100_000)),
])
def test_backtracking_regexes_finish(name: str, work: Callable[[], object]) -> None:
    """A generous budget for inputs that took minutes (or forever) before the repair."""
    started = time.perf_counter()
    work()
    assert time.perf_counter() - started < 30, name


def test_no_page_of_the_vendored_corpora_meets_a_bound() -> None:
    """The bounds change nothing real: every paragraph of the six corpora is far under the
    label-work budget, and every list item under the link-list bracket limit."""
    for corpus in CORPORA:
        for path in sorted(corpus.rglob("*.md*")):
            text = path.read_text(encoding="utf-8")
            for token in parse.block_tokens(text):
                if token.type == "inline":
                    limit = parse.LABEL_WORK_PER_CHAR * len(token.content) + parse.LABEL_WORK_FLOOR
                    assert parse._label_work(token.content, limit) <= 4 * len(token.content) + 64, path
            for line in text.split("\n"):
                if (item := dialects._LIST_ITEM.match(line)) is not None:
                    assert item.group(1).count("[") <= dialects.MAX_LINK_LIST_BRACKETS, path


def test_dialect_detection_reads_no_page_the_seed_refuses(tmp_path: Path) -> None:
    """A symlink leading out of SEEDS_DIR is not read (its MkDocs markers do not count) and
    a FIFO named like a page does not block the detection."""
    seeds, outside = tmp_path / "docs", tmp_path / "outside"
    seeds.mkdir()
    outside.mkdir()
    (seeds / "page.md").write_text("# Page\n\nPlain text.\n")
    (outside / "secret.md").write_text("!!! note\n    x\n\n--8<-- a.md\n" * 10)
    (seeds / "escape.md").symlink_to(outside / "secret.md")
    os.mkfifo(seeds / "pipe.md")
    pages = sorted(seeds.iterdir())
    result: list[Dialect] = []
    worker = threading.Thread(target=lambda: result.append(detect_dialect(seeds, pages)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert result == [Dialect.markdown]

    (seeds / "inside.md").symlink_to(seeds / "page.md")  # a link inside SEEDS_DIR is read
    (seeds / "page.md").write_text("!!! note\n    x\n")
    assert detect_dialect(seeds, [seeds / "inside.md"]) is Dialect.mkdocs
