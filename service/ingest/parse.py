"""One Markdown parse per page: the token stream every ingest step reads.

markdown-it-py (CommonMark + tables + strikethrough, with the front matter and
footnote plugins of mdit-py-plugins) turns a page into tokens once; from them
come the front matter, the sections (headings, also headings inside outliner
bullets), the blocks of each section (paragraph, list, table, code), the
plain text keywords and summaries are drawn from, and the links the link check
resolves.  `parse_page` is cached on the page text, so the seeder's document
step and the chunker share one parse.

Block text stays the page's own Markdown (the lines the token covers, dedented),
so chunk text and hashes of plain Markdown pages do not change; markup that
only some tools understand is cleaned from it (see `clean_markdown`):
`[[Page]]` / `[[Page|label]]` / `[[Page#Heading]]` wikilinks → their label,
`![[embeds]]`, `((block refs))`, `{{macros}}` (but `{{cloze answer}}` keeps its
answer and `{{embed [[Page]]}}` its page), images, HTML comments, footnote
markers, `key:: value` property lines and org `#+BEGIN_X` / `#+END_X` marker lines go,
HTML tags keep their text only,
callouts (`> [!tip] Title`) become "Tip: Title".  Code (fenced, indented,
inline) is never rewritten.

Outliner pages (Logseq: every block a `- ` bullet, headings inside bullets,
`key:: value` page properties on the first lines) are read the same way: a
bullet whose subtree holds a heading is opened up and its heading starts a
section; any other bullet (with its children) is a list block of the section.
"""

from __future__ import annotations

import html
import itertools
import re
import textwrap
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import yaml
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from service.ingest.dialects import (
    DIALECTS,
    Anchors,
    AnchorStyle,
    Dialect,
    DialectSpec,
    github_slug,
    heading_id,
    rewrite,
    strip_attr_lists,
)
from service.ingest.scan import Scan, code_spans

BlockKind = Literal["para", "list", "table", "code"]
LinkKind = Literal["markdown", "wikilink", "block", "ref", "external"]
"""`ref`: a reStructuredText `:ref:` whose label no page defines (service/ingest/rst.py)."""

SECTION_LEVELS = 3
"""`#`–`###` open sections; deeper headings stay in their section's text."""



def _markdown_it() -> MarkdownIt:
    return (
        MarkdownIt("commonmark", {"html": True})
        .enable("table")
        .enable("strikethrough")
        .use(front_matter_plugin)
        .use(footnote_plugin)
    )


_MD = _markdown_it()
_LABEL_RULES = ["link", "image", "footnote_inline", "footnote_ref"]
_MD_NO_LABELS = _markdown_it().disable(_LABEL_RULES)
"""For a paragraph whose brackets would make markdown-it's label scans quadratic: its text
read with no links, images or footnote references (see `_label_work`)."""
LABEL_WORK_PER_CHAR = 16
"""Label-scan work allowed per character of a paragraph (plus `LABEL_WORK_FLOOR`). The
vendored documentation peaks at 2 (a line of links); 10,000 `[[` on a line need 5,000."""
LABEL_WORK_FLOOR = 4096
_BRACKET = re.compile(r"[\[\]]")
_FOOTNOTE_OPEN = re.compile(r"\[\^")
_FOOTNOTE_STOP = re.compile(r"[ \n\]]")
# A link destination's scan (`](dest`) runs to a space or control character, or gives up
# past 32 nested `(`.
_DESTINATION_OPEN = re.compile(r"\]\(")
_DESTINATION_STOP = re.compile(r"[\x00-\x20\x7f]")
_DESTINATION_PARENS = re.compile(r"(?:[^(\x00-\x20\x7f]*\(){33}")


def _label_work(src: str, limit: int) -> int:
    """How far markdown-it's label scans would read in `src`, counted in one pass (stops
    past `limit`): from each `[` to its `]` (to the end when unclosed), from each `[^` to the
    space, line end or `]` where a footnote reference's scan stops, and from each `](` to where
    its destination's scan stops."""
    work, opens = 0, []
    for match in _BRACKET.finditer(src):
        if match.group() == "[":
            opens.append(match.start())
        elif opens:
            work += match.start() - opens.pop()
    work += sum(len(src) - at for at in opens)
    for opener, stops in ((_FOOTNOTE_OPEN, _FOOTNOTE_STOP), (_DESTINATION_OPEN, _DESTINATION_STOP)):
        stop = -1
        for match in opener.finditer(src):
            if work > limit:
                return work
            if stop < match.end():  # one search per stretch between stops, not one per opener
                found = stops.search(src, match.end())
                stop = found.start() if found is not None else len(src)
            parens = _DESTINATION_PARENS.match(src, match.end()) if opener is _DESTINATION_OPEN else None
            work += min(stop, parens.end() if parens is not None else stop) - match.start()
    return work


def _bounded_inline(state: StateCore) -> None:
    """markdown-it's core `inline` rule, with `_MD_NO_LABELS` for paragraphs past the work
    budget: markdown-it rescans from every `[` (and footnotes from every `[^`, `^[`), so a
    line of 20,000 `[^` took 46 s; real pages stay far under the budget and parse as before."""
    for token in state.tokens:
        if token.type == "inline":
            if token.children is None:
                token.children = []
            limit = LABEL_WORK_PER_CHAR * len(token.content) + LABEL_WORK_FLOOR
            md = _MD_NO_LABELS if _label_work(token.content, limit) > limit else state.md
            md.inline.parse(token.content, md, state.env, token.children)


_MD.core.ruler.at("inline", _bounded_inline)

# --- cleaning rules (applied outside code only) ------------------------------
_FENCE = re.compile(r"^\s*(?:[-*+]\s+|\d{1,9}[.)]\s+)?(`{3,}|~{3,})")
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_PROPERTY_LINE = re.compile(r"^\s*(?:[-*+]\s+)?[A-Za-z][\w.-]*::(?:\s.*)?$")
_PROPERTY = re.compile(r"^([A-Za-z][\w.-]*)::\s*(.*)$")
_ORG_MARKER = re.compile(r"^\s*(?:[-*+]\s+)?#\+(?:BEGIN|END)_\w+.*$", re.IGNORECASE)
_CALLOUT = re.compile(r"^(\s*(?:>\s*)+)\[!(\w+)\][+-]?\s*(.*)$")
_FOOTNOTE_DEF = re.compile(r"^(\s*)\[\^[^\]\s]+\]:\s?")
# Each `Scan` (service/ingest/scan.py): the pattern, and the head spanning what decides a
# start (up to the first `]`, `)` or line end), which a failed start is not retried inside.
_FOOTNOTE_REF = Scan(re.compile(r"\[\^[^\]\s]+\]"), re.compile(r"\[\^[^\]\s]*"))
_EMBED = Scan(re.compile(r"!\[\[[^\]\n]*\]\]"), re.compile(r"!\[\[[^\]\n]*"))
# `\s+` may cross the line end where the span stops: a `{{embed` right before it is retried.
_MACRO_EMBED = Scan(re.compile(r"\{\{embed\s+\[\[([^\]\n]+)\]\]\s*\}\}"),
                    re.compile(r"\{\{embed\s+\[\[[^\]\n]*?(?=[\]\n]|\Z|\{\{embed[^\S\n]*\n)"))
# `{{cloze answer}}`, `{{cloze answer \\ hint}}`: the answer is kept (see `_cloze`). No braces
# inside, so no start lies inside another's span and the plain pattern is linear.
_MACRO_CLOZE = re.compile(r"\{\{cloze\s++([^{}\n]*)\}\}")
_CLOZE_HINT = re.compile(r"(?<!\s)\s*\\\\")  # from a run of spaces' first one only
_MACRO = re.compile(r"\{\{[^{}\n]*\}\}")
# The attribute list after an image holds no `{`: its scan stops where the next one could start.
_IMAGE = Scan(re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)(?:\{[^{}\n]*\})?"),
              re.compile(r"!\[[^\]\n]*(?:\]\([^)\n]*)?"))
URL_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")
"""A link target that leaves the corpus by its scheme (`https:`, `mailto:`) or is protocol-relative."""
_TAG_WIKILINK = Scan(re.compile(r"#\[\[([^\]\n]+)\]\]"), re.compile(r"#\[\[[^\]\n]*"))
_WIKILINK = Scan(re.compile(r"\[\[([^\]\n]+)\]\]"), re.compile(r"\[\[[^\]\n]*"))
_BLOCK_REF = re.compile(r"\(\(([0-9a-fA-F-]{8,})\)\)")
_BLOCK_ID = re.compile(r"^\s*(?:[-*+]\s+)?id::\s*([0-9a-fA-F-]{8,})\s*$", re.MULTILINE)
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_EMPTY_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s*$")
_BLANK_RUNS = re.compile(r"\n{3,}")
# A sentence ends at . ! ? (optionally closed by a quote, bracket or emphasis)
# followed by whitespace and something that can start a sentence; not after a
# known abbreviation ("e.g. Notes", "Ch. 3").
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_`]*(?=\s+[A-Z0-9\"'(\[`*_])")
_SENTENCE_CLOSERS = "\"')]*_`"
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "ch", "fig", "no", "dr", "mr", "mrs", "ms", "st"})
_HEADING_LINE = re.compile(r"^\s*(?:>\s*)*(?:[-*+]\s+)?#{1,6}\s")


@dataclass(frozen=True, slots=True)
class Link:
    """An internal link as written: `[[Page#Heading]]`, `[t](../x.md#a)`, `[t](#a)`; `external`:
    one that leaves the corpus on purpose (an intersphinx `python:library/pdb`)."""

    target: str
    kind: LinkKind
    line: int
    """1-based line in the file (front matter included)."""


@dataclass(frozen=True, slots=True)
class Block:
    kind: BlockKind
    text: str
    """Cleaned Markdown of the block (code: verbatim)."""
    items: tuple[str, ...] = ()
    """A list's top-level items (cleaned Markdown with their children)."""


@dataclass(frozen=True, slots=True)
class Section:
    path: tuple[str | None, ...]
    """Open headings, outermost first; `None` stands for the page title."""
    anchor: str
    """URL fragment of the section's heading (GitHub style), "" before the first heading."""
    blocks: tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class ParsedPage:
    meta: dict[str, Any]
    """Front matter (any keys)."""
    properties: dict[str, str]
    """Outliner page properties (`key:: value` lines before the first block)."""
    body: str
    """The page without front matter and properties, cleaned (see module doc)."""
    h1: str | None
    """The first `# ` heading, if any."""
    sections: tuple[Section, ...]
    headings: tuple[str, ...]
    """Every heading's plain text, in order."""
    anchors: frozenset[str]
    plain: str
    """Body prose as plain text: no markup, code or link targets (for keywords)."""
    first_paragraph: str
    """Source of the first top-level paragraph, whitespace collapsed ("" if none)."""
    first_text: str
    """Plain text of the first non-heading block (summaries of all-bullet pages)."""
    links: tuple[Link, ...] = field(default=())
    block_ids: frozenset[str] = frozenset()
    """Outliner block ids (`id:: <uuid>`) that `((uuid))` references point at."""
    stub: bool = False
    """Nothing to say on its own: only an include, a directive, links, properties
    or components (service/ingest/dialects.py `Rewritten.stub`)."""
    generated: bool = False
    """Part of the page is written by its build (an include, a directive, a shortcode): the site's
    page may carry anchors this parse cannot see (service/ingest/links.py: unverifiable)."""


class FrontMatterError(ValueError):
    """Broken YAML front matter; `line` is 1-based in the file."""

    def __init__(self, reason: str, line: int | None) -> None:
        super().__init__(reason if line is None else f"{reason} (line {line})")
        self.reason = reason
        self.line = line


# --- public helpers ------------------------------------------------------------


def anchor_slug(heading: str) -> str:
    """GitHub's heading anchor: lower-case, punctuation out, spaces → '-'."""
    return github_slug(clean_inline(heading).strip())


def sentence_ends(text: str) -> list[int]:
    """Offsets just after each sentence of `text` that another sentence follows."""
    return [m.end() for m in _SENTENCE_END.finditer(text) if not _after_abbreviation(text, m.end())]


def _after_abbreviation(text: str, end: int) -> bool:
    stem = text[max(0, end - 24) : end].rstrip(_SENTENCE_CLOSERS).rstrip(".!?")
    word = stem.rsplit(None, 1)[-1] if stem.split() else ""
    return word.lower().lstrip("(\"'") in _ABBREVIATIONS


def sentences(text: str) -> list[str]:
    """A paragraph cut at sentence ends (the chunker's last resort before word cuts)."""
    cuts = [0, *sentence_ends(text), len(text)]
    return [part for a, b in itertools.pairwise(cuts) if (part := text[a:b].strip())]


def block_tokens(markdown: str) -> list[Token]:
    """The parser's token stream for a fragment (the one every Markdown reader here uses)."""
    return _MD.parse(markdown)


@dataclass(frozen=True, slots=True)
class Unit:
    """A piece of a Markdown fragment that a cut never splits (offsets into the fragment)."""

    start: int
    end: int
    heading: bool = False
    """A text never ends on a heading: the cut after it is not allowed."""


def units(markdown: str) -> tuple[Unit, ...]:
    """The fragment's uncuttable pieces in order, from its token stream.

    A top-level paragraph gives one unit per sentence; a list item or quote
    gives its marker together with its first block (a numbered step is never
    split from its text), then one unit per further block or nested item;
    tables, code blocks, HTML blocks and headings are whole units.
    """
    walker = _UnitWalker(markdown)
    tokens = _MD.parse(markdown)
    walker.walk(tokens, 0, len(tokens))
    return tuple(walker.units)


def name_slug(name: str) -> str:
    """Lower-case, every run outside a–z0–9 → one '-', trimmed (slugs, wikilink targets)."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")


def clean_inline(text: str) -> str:
    """Tool-specific inline markup → readable text; code spans untouched."""
    out: list[str] = []
    last = 0
    for start, end in code_spans(text):
        out.append(_clean_prose_inline(text[last:start]))
        out.append(text[start:end])
        last = end
    out.append(_clean_prose_inline(text[last:]))
    return "".join(out)


def clean_markdown(text: str, keep_heading_ids: bool = False) -> str:
    """Clean a Markdown fragment for indexing, snippets and context (module doc).

    Attribute lists (`{#id .cls}`) go, but with `keep_heading_ids` a heading's
    custom id stays: a page body keeps the anchors its generator gave it, so a
    later parse of the body alone finds the same sections and anchors."""
    lines: list[str] = []
    prose: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if prose:
            lines.extend(_clean_prose_lines("\n".join(prose), keep_heading_ids))
            prose.clear()

    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is None and match is not None:
            flush()
            fence = match.group(1)
            lines.append(line)
        elif fence is not None:
            lines.append(line)
            if match is not None and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
        else:
            prose.append(line)
    flush()
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip("\n")


def plain_text(markdown: str) -> str:
    """A Markdown fragment as the words a reader sees (snippets): markup, link
    targets and images out, inline code kept, whitespace collapsed."""
    words: list[str] = []
    for token in _MD.parse(clean_markdown(markdown)):
        if token.type == "inline":
            for child in token.children or ():
                if child.type in ("text", "code_inline"):
                    words.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    words.append(" ")
        elif token.type in ("fence", "code_block"):
            words.append(token.content)
        words.append(" ")
    return " ".join("".join(words).split())


def wikilink_target(inner: str) -> tuple[str, str]:
    """`Page#Heading|label` → ("Page", "Heading")."""
    target = inner.split("|", 1)[0]
    page, _, heading = target.partition("#")
    return page.strip(), heading.strip()


# --- parsing -----------------------------------------------------------------


_BY_BODY: OrderedDict[str, ParsedPage] = OrderedDict()
_BY_BODY_MAX = 2048
_BY_BODY_LOCK = threading.Lock()


def page_of(body: str) -> ParsedPage:
    """The parse a page's cleaned body came from (the chunker's view), else a parse of `body`."""
    with _BY_BODY_LOCK:
        page = _BY_BODY.get(body)
    return page if page is not None else parse_page(body)


def parse_page(text: str, dialect: Dialect = Dialect.markdown, mdx: bool = False) -> ParsedPage:
    """Parse one page (LF line ends expected) as `dialect` renders it (`mdx`: an `.mdx`
    page). Raises FrontMatterError on broken YAML."""
    return remember(_parse(text, dialect, mdx))


def remember(page: ParsedPage) -> ParsedPage:
    """Keep `page` under its body: the chunker's `page_of` then reuses this parse (and a
    reader of another format, service/ingest/rst.py, gets its sections chunked as it read them)."""
    with _BY_BODY_LOCK:
        _BY_BODY[page.body] = page
        _BY_BODY.move_to_end(page.body)
        while len(_BY_BODY) > _BY_BODY_MAX:
            _BY_BODY.popitem(last=False)
    return page


def _front_matter_end(lines: list[str]) -> int:
    """The line after a leading `---` … `---` block (0 without one): never rewritten."""
    if lines[0].rstrip() != "---":
        return 0
    return next((at + 1 for at in range(1, len(lines)) if lines[at].rstrip() in ("---", "...")), 0)


@lru_cache(maxsize=256)
def _parse(text: str, dialect: Dialect = Dialect.markdown, mdx: bool = False) -> ParsedPage:
    """Parse one page (LF line ends expected). Raises FrontMatterError on broken YAML."""
    spec = DIALECTS[dialect]
    lines = text.split("\n")
    head = _front_matter_end(lines)
    rewritten = rewrite(lines[head:], spec, mdx)
    lines = lines[:head] + rewritten.lines
    tokens = _MD.parse("\n".join(lines))
    meta: dict[str, Any] = {}
    start = 0
    if tokens and tokens[0].type == "front_matter":
        meta = _front_matter(tokens[0])
        start = 1
    elif lines[0].rstrip() == "---" and len(lines) > 1 and lines[1].strip():
        # An opening '---' with text right under it and no closing line: broken
        # front matter rather than a page that starts with a rule.
        raise FrontMatterError("broken front matter: no closing '---' line", 1)
    properties, skip_until = _page_properties(tokens, start, lines)
    walker = _Walker(lines, spec)
    walker.walk(tokens, start, len(tokens), skip_until)
    walker.close()
    body_start = skip_until if skip_until else (tokens[0].map[1] if start and tokens[0].map else 0)
    body = clean_markdown("\n".join(walker.with_ids()[body_start:]).strip("\n"), keep_heading_ids=True)
    return ParsedPage(
        meta=meta,
        properties=properties,
        body=body,
        h1=walker.h1,
        sections=tuple(walker.sections),
        headings=tuple(walker.headings),
        anchors=frozenset(walker.anchors | rewritten.anchors),
        plain="\n".join(walker.plain),
        first_paragraph=walker.first_paragraph,
        first_text=walker.first_text,
        links=tuple(_links(tokens, lines)),
        block_ids=frozenset(m.lower() for m in _BLOCK_ID.findall(text)),
        stub=rewritten.stub,
        generated=rewritten.generated,
    )


MAX_YAML_ALIASES = 64
"""Front matter using more YAML aliases (`*name`) is refused: a few nested aliases repeated
(an "alias bomb") make a small file stand for billions of values for whoever walks them."""


def _front_matter(token: Token) -> dict[str, Any]:
    try:
        aliases = sum(isinstance(event, yaml.AliasEvent) for event in yaml.parse(token.content, yaml.SafeLoader))
        if aliases > MAX_YAML_ALIASES:
            raise FrontMatterError(f"front matter uses {aliases} YAML aliases (more than {MAX_YAML_ALIASES}): "
                                   "an alias bomb expands to unbounded data", 2)
        data = yaml.safe_load(token.content)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 2 if mark is not None else None  # +1 for the '---', +1 for 1-based
        problem = getattr(err, "problem", None) or "invalid YAML"
        raise FrontMatterError(f"broken front matter: {problem}", line) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontMatterError("broken front matter: expected 'key: value' pairs", 2)
    return {str(k): v for k, v in data.items()}


def _page_properties(tokens: Sequence[Token], start: int, lines: list[str]) -> tuple[dict[str, str], int]:
    """Leading `key:: value` lines of an outliner page → properties, and the line after them."""
    span = tokens[start].map if start < len(tokens) and tokens[start].type == "paragraph_open" else None
    if span is None:
        return {}, 0
    first, last = span
    props: dict[str, str] = {}
    for line in lines[first:last]:
        match = _PROPERTY.match(line.strip())
        if match is None:
            return {}, 0
        props[match.group(1).lower()] = match.group(2).strip()
    return props, last


def property_values(value: str) -> list[str]:
    """`[[A]], [[B c]], d` → ["A", "B c", "d"] (Logseq property lists)."""
    links = [wikilink_target(m)[0] for m in _WIKILINK.findall(value)]
    rest = _WIKILINK.sub("", value)
    plain = [v.strip().lstrip("#") for v in rest.split(",") if v.strip().lstrip("#").strip()]
    return [v for v in [*links, *plain] if v]


class _Walker:
    """Walks block tokens and collects sections, headings and plain text."""

    def __init__(self, lines: list[str], spec: DialectSpec = DIALECTS[Dialect.markdown]) -> None:
        self.lines = lines
        self.spec = spec
        self.path: list[str | None] = [None]
        self.anchor = ""
        self.blocks: list[Block] = []
        self.sections: list[Section] = []
        self.headings: list[str] = []
        self.slugger = Anchors(spec.anchors)
        self.anchors: set[str] = set()
        self.ids: dict[int, str] = {}
        """Line → the anchor a heading there gets that GitHub's rule would not give it."""
        self.plain: list[str] = []
        self.h1: str | None = None
        self.first_paragraph = ""
        self.first_text = ""

    # sections -----------------------------------------------------------
    def close(self) -> None:
        if self.blocks:
            self.sections.append(Section(tuple(self.path), self.anchor, tuple(self.blocks)))
        self.blocks = []

    def with_ids(self) -> list[str]:
        """The page's lines, each heading whose anchor GitHub's rule would not compute
        given it as a custom id (`## server.host {#server-host}`)."""
        lines = list(self.lines)
        for at, anchor in self.ids.items():
            lines[at] = f"{lines[at].rstrip()} {{#{anchor}}}"
        return lines

    def register(self, inline: Token) -> tuple[str, str]:
        """A heading's text and anchor (custom id, else the dialect's rule)."""
        explicit = heading_id(_heading_source(inline, clean=False))[1]
        text = " ".join(_heading_source(inline).split())
        self.headings.append(text)
        anchor = self.slugger.add(text, explicit)
        self.anchors.add(anchor)
        if explicit is None and self.spec.anchors is not AnchorStyle.github and inline.map is not None \
                and anchor != github_slug(text):
            self.ids[inline.map[0]] = anchor
        return text, anchor

    def heading(self, level: int, inline: Token) -> str:
        text, anchor = self.register(inline)
        if level == 1 and self.h1 is None:
            self.h1 = text
        if level > SECTION_LEVELS:
            return anchor
        self.close()
        # Level 1 is the root (title); level n keeps levels < n and replaces n.
        del self.path[level - 1 :]
        while len(self.path) < level - 1:
            self.path.append("")  # a skipped level leaves no empty crumb
        self.path.append(text)
        self.anchor = anchor
        return anchor

    def add(self, kind: BlockKind, token: Token, plain: str, items: tuple[str, ...] = ()) -> None:
        source = self.source(token)
        text = source if kind == "code" else clean_markdown(source)
        if not html.unescape(text).strip():  # `&nbsp;` alone (a spacer above a title) says nothing
            return
        self.blocks.append(Block(kind, text, items))
        if plain.strip():
            self.plain.append(plain)
            if not self.first_text:
                self.first_text = " ".join(plain.split())

    def source(self, token: Token) -> str:
        assert token.map is not None
        first, last = token.map
        return textwrap.dedent("\n".join(self.lines[first:last])).strip("\n")

    # tokens -------------------------------------------------------------
    def walk(self, tokens: Sequence[Token], i: int, end: int, skip_until: int = 0) -> None:
        while i < end:
            token = tokens[i]
            close = _matching_close(tokens, i)
            if token.map is not None and token.map[1] <= skip_until:
                i = close + 1
                continue
            kind = token.type
            if kind == "heading_open":
                level = int(token.tag[1])
                if level > SECTION_LEVELS:
                    self.add("para", token, _plain(tokens[i + 1]))
                self.heading(level, tokens[i + 1])
            elif kind in ("bullet_list_open", "ordered_list_open"):
                self.list(tokens, i, close)
            elif kind == "paragraph_open":
                plain = _plain(tokens[i + 1])
                if not self.first_paragraph and token.level == 0:
                    source = clean_markdown(self.source(token))
                    if source.strip():
                        self.first_paragraph = " ".join(source.split())
                self.add("para", token, plain)
            elif kind == "table_open":
                self.add("table", token, _plain_range(tokens, i, close))
            elif kind in ("fence", "code_block"):
                self.add("code", token, "")
            elif kind in ("blockquote_open", "html_block", "hr"):
                if token.map is not None:
                    self.add("para", token, _plain_range(tokens, i, close))
                for j in range(i, close):  # `> #### custom_dir` is a heading with an anchor too
                    if tokens[j].type == "heading_open":
                        self.register(tokens[j + 1])
            elif kind == "footnote_block_open":
                self.footnotes(tokens, i, close)
            i = close + 1

    def list(self, tokens: Sequence[Token], i: int, close: int) -> None:
        if not any(t.type == "heading_open" for t in tokens[i:close]):
            items: list[str] = []
            j = i + 1
            while j < close:
                item_close = _matching_close(tokens, j)
                if tokens[j].map is not None:
                    item = clean_markdown(self.source(tokens[j]))
                    if item.strip():
                        items.append(item)
                j = item_close + 1
            self.add("list", tokens[i], _plain_range(tokens, i, close), tuple(items))
            return
        # An outliner list: open up the items that hold headings.
        j = i + 1
        while j < close:
            item_close = _matching_close(tokens, j)
            if any(t.type == "heading_open" for t in tokens[j:item_close]):
                self.walk(tokens, j + 1, item_close)
            elif tokens[j].map is not None:
                item = clean_markdown(self.source(tokens[j]))
                self.add("list", tokens[j], _plain_range(tokens, j, item_close), (item,))
            j = item_close + 1

    def footnotes(self, tokens: Sequence[Token], i: int, close: int) -> None:
        for j in range(i, close):
            if tokens[j].type == "paragraph_open" and tokens[j].map is not None:
                self.add("para", tokens[j], _plain(tokens[j + 1]))


class _UnitWalker:
    """Turns block tokens (their line maps) into `Unit`s; see `units`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line) + 1)
        self.units: list[Unit] = []
        self.pending: int | None = None
        """Start of an open list item or quote whose first block is not out yet."""
        self.depth = 0

    def span(self, token: Token) -> tuple[int, int]:
        assert token.map is not None
        first, last = token.map
        while last > first + 1 and not self.lines[last - 1].strip():
            last -= 1
        line = self.lines[first]
        start = self.offsets[first] + len(line) - len(line.lstrip())
        return start, self.offsets[last - 1] + len(self.lines[last - 1].rstrip())

    def emit(self, start: int, end: int, heading: bool = False, by_sentence: bool = False) -> None:
        if self.pending is not None:
            start, self.pending, by_sentence = self.pending, None, False
        if end <= start:
            return
        cuts = [start]
        if by_sentence:  # each next sentence starts at its first non-space (no slicing: linear)
            text = self.text[start:end]
            cuts += [start + (m.start() if (m := _NON_SPACE.search(text, e)) else len(text))
                     for e in sentence_ends(text)]
        for a, b in zip(cuts, [*cuts[1:], end], strict=True):
            self.units.append(Unit(a, _end_before_spaces(self.text, a, b), heading))

    def walk(self, tokens: Sequence[Token], i: int, end: int) -> None:
        while i < end:
            token = tokens[i]
            close = _matching_close(tokens, i)
            if token.map is not None:
                if token.type in ("list_item_open", "blockquote_open"):
                    self.container(tokens, i, close)
                elif token.type in ("bullet_list_open", "ordered_list_open"):
                    self.walk(tokens, i + 1, close)
                else:
                    start, stop = self.span(token)
                    self.emit(start, stop, heading=token.type == "heading_open",
                              by_sentence=token.type == "paragraph_open" and self.depth == 0)
            i = close + 1

    def container(self, tokens: Sequence[Token], i: int, close: int) -> None:
        start, stop = self.span(tokens[i])
        if self.pending is None:
            self.pending = start
        self.depth += 1
        self.walk(tokens, i + 1, close)
        self.depth -= 1
        if self.pending is not None:  # an empty item: the marker alone
            self.emit(start, stop)


_NON_SPACE = re.compile(r"\S")


def _end_before_spaces(text: str, start: int, end: int) -> int:
    """`len(text[:end].rstrip())`, reading back from `end` only as far as the spaces go."""
    kept = text[start:end].rstrip()
    return start + len(kept) if kept else len(text[:start].rstrip())


def _matching_close(tokens: Sequence[Token], i: int) -> int:
    if tokens[i].nesting != 1:
        return i
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def _plain(inline: Token) -> str:
    """Inline token → plain text: link text kept, targets, images, code and HTML dropped."""
    parts: list[str] = []
    for child in inline.children or ():
        if child.type == "text":
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "code_inline":
            parts.append(" ")
    return _clean_prose_inline("".join(parts), plain=True)


def _heading_source(inline: Token, clean: bool = True) -> str:
    """A heading's text as its generator slugs it: inline code kept as written
    (`<Badge>` too), markup and attribute lists out (`clean`)."""
    parts: list[str] = []
    for child in inline.children or ():
        if child.type == "text":  # a tag is an html_inline token: `<…>` here is text (`&lt;string&gt;`)
            parts.append(_clean_prose_inline(child.content, plain=True, tags=False) if clean else child.content)
        elif child.type == "code_inline":
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def _plain_range(tokens: Sequence[Token], i: int, close: int) -> str:
    return "\n".join(_plain(t) for t in tokens[i:close] if t.type == "inline")


def _links(tokens: Sequence[Token], lines: list[str]) -> Iterator[Link]:
    """Internal links: Markdown links without a scheme, and wikilinks outside code."""
    for token in tokens:
        if token.type != "inline" or token.map is None:
            continue
        line = token.map[0] + 1
        for child in token.children or ():
            if child.type == "link_open":
                href = str(child.attrs.get("href", ""))
                ref = _BLOCK_REF.fullmatch(href)
                if ref is not None:
                    yield Link(ref.group(1).lower(), "block", line)
                elif href and not URL_SCHEME.match(href):
                    yield Link(href, "markdown", line)
            elif child.type == "text":
                for inner in _WIKILINK.findall(_EMBED.sub("", child.content)):
                    yield Link(inner, "wikilink", line)
                for block in _BLOCK_REF.findall(child.content):
                    yield Link(block.lower(), "block", line)


# --- cleaning internals --------------------------------------------------------


def _clean_prose_inline(text: str, plain: bool = False, tags: bool = True) -> str:
    """Tool-specific inline markup out of prose; `tags`: HTML tags too (not where `<…>` is text)."""
    text = _FOOTNOTE_REF.sub("", text)
    text = _EMBED.sub("", text)
    text = _MACRO_EMBED.sub(r"\1", text)
    text = _MACRO_CLOZE.sub(_cloze, text)
    text = _MACRO.sub("", text)
    text = _IMAGE.sub("", text)
    text = _TAG_WIKILINK.sub(lambda m: wikilink_label(m.group(1)), text)
    text = _WIKILINK.sub(lambda m: wikilink_label(m.group(1)), text)
    text = _BLOCK_REF.sub("", text)
    if tags:
        text = _HTML_TAG.sub("", text)
    return strip_attr_lists(text)


def _cloze(match: re.Match[str]) -> str:
    """A cloze's answer: its text up to the hint's `\\\\` (the space before it dropped)."""
    answer = match.group(1)
    hint = _CLOZE_HINT.search(answer)
    return answer if hint is None else answer[: hint.start()]


def wikilink_label(inner: str) -> str:
    """What a reader sees of `[[Page#Heading|label]]`: the label, else the page (and heading)."""
    if "|" in inner:
        return inner.split("|", 1)[1].strip()
    page, heading = wikilink_target(inner)
    return f"{page} > {heading}" if page and heading else page or heading


def _clean_prose_lines(text: str, keep_heading_ids: bool = False) -> list[str]:
    text = _HTML_COMMENT.sub("", text)
    out: list[str] = []
    for line in text.split("\n"):
        if keep_heading_ids and _HEADING_LINE.match(line):
            line, custom = heading_id(line)
            if custom is not None:
                out.append(f"{clean_inline(line).rstrip()} {{#{custom}}}")
                continue
        if _PROPERTY_LINE.match(line) or _ORG_MARKER.match(line):
            continue
        callout = _CALLOUT.match(line)
        if callout is not None:
            prefix, kind, title = callout.groups()
            label = kind.capitalize()
            line = f"{prefix}{label}: {title}" if title else f"{prefix}{label}:"
        line = _FOOTNOTE_DEF.sub(r"\1", line)
        cleaned = clean_inline(line)
        if cleaned != line and (not cleaned.strip() or _EMPTY_BULLET.match(cleaned)):
            continue  # the line held only markup (an image, an embed, a block ref)
        out.append(cleaned.rstrip() if cleaned != line else line)
    return out
