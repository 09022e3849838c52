"""Documentation dialects: each Markdown flavour read as its site generator renders it.

A dialect is a row of `DIALECTS` (flag `seeding.dialect`; `auto` detects it, see
`detect_dialect`). It decides three things, all before and around the one
markdown-it parse of service/ingest/parse.py:

- **rewrite** (`rewrite`): the page's own syntax turned into plain CommonMark,
  line for line (a page keeps its line numbers, so links are reported where they
  are written). MDX (`.mdx` pages of every dialect): `import` / `export`
  statements and `{/* comments */}` go, a JSX component's tags go while its text
  stays (dedented, as MDX has no indented code), with its meaningful attribute as
  a label line (`<Aside type="tip" title="T">` → "Tip: T", `<TabItem label="npm">`
  → "npm:", `<Card title="T">` → "T:"); self-closing components go. Containers
  (`::: tip Title`, `::: details Title`, `::: code-group`, Starlight's
  `:::note[Title]` / `:::tip{icon=…}`) become a label line like callouts
  ("Tip: Title"; a details block its title; a code group nothing). MkDocs:
  mkdocstrings `::: package.Object` becomes the object's name (its options go) and
  an anchor of that name, `!!! note "Title"` admonitions a label line over their
  dedented text, and so do content tabs (`=== "pip"` → "pip:"). Every dialect drops `<script>` / `<style>` blocks
  and the table-of-contents marker `[[toc]]` on a line of its own (VitePress writes it; the
  vendored trees' detection may call such a folder plain Markdown).
- **anchors** (`Anchors`): a heading's URL fragment computed the way the generator
  computes it, duplicates numbered as it numbers them: GitHub (github-slugger:
  Docusaurus, Starlight, plain Markdown), VitePress (@mdit-vue/shared `slugify`:
  `server.host` → `server-host`) and MkDocs (python-markdown `toc`: `_1` suffixes).
  A custom id (`## Title {#id}`, MkDocs `{ #id }` / `{: #id .class }`) wins in
  every dialect; MkDocs and VitePress inline attribute lists (`**x**{ #id }`) add
  anchors too.
- **stub**: a page with nothing to say on its own (only an include line, a
  directive, a list of links, properties or components) — see `Rewritten.stub`.
"""

from __future__ import annotations

import os
import re
import stat
import textwrap
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from service.ingest.scan import FENCE, Scan


class Dialect(StrEnum):
    markdown = "markdown"
    """GitHub-flavoured Markdown, Obsidian, Logseq (the default; anchors as GitHub)."""
    mkdocs = "mkdocs"
    vitepress = "vitepress"
    docusaurus = "docusaurus"
    starlight = "starlight"
    mdx = "mdx"
    """Other MDX sites (Nextra, Mintlify): MDX pages, GitHub anchors, `:::` asides."""


class AnchorStyle(StrEnum):
    github = "github"
    vitepress = "vitepress"
    mkdocs = "mkdocs"


@dataclass(frozen=True, slots=True)
class DialectSpec:
    name: Dialect
    anchors: AnchorStyle
    containers: bool
    """`::: tip Title` … `:::` (VitePress, Docusaurus, Starlight asides)."""
    mkdocs_blocks: bool
    """mkdocstrings `::: a.b` directives and `!!! note` admonitions."""
    inline_ids: bool
    """Attribute lists on inline elements define anchors (`**x**{ #id }`)."""
    file_links_from_root: bool = False
    """A link to a page's file that the linking page's folder lacks is read from the docs root,
    as Docusaurus resolves it (Redux's glossary, in `understanding/thinking-in-redux/`, links
    `api/Store.md#getState`)."""


DIALECTS: dict[Dialect, DialectSpec] = {
    Dialect.markdown: DialectSpec(Dialect.markdown, AnchorStyle.github, containers=False,
                                  mkdocs_blocks=False, inline_ids=False),
    Dialect.mkdocs: DialectSpec(Dialect.mkdocs, AnchorStyle.mkdocs, containers=False,
                                mkdocs_blocks=True, inline_ids=True),
    Dialect.vitepress: DialectSpec(Dialect.vitepress, AnchorStyle.vitepress, containers=True,
                                   mkdocs_blocks=False, inline_ids=True),
    Dialect.docusaurus: DialectSpec(Dialect.docusaurus, AnchorStyle.github, containers=True,
                                    mkdocs_blocks=False, inline_ids=False, file_links_from_root=True),
    Dialect.starlight: DialectSpec(Dialect.starlight, AnchorStyle.github, containers=True,
                                   mkdocs_blocks=False, inline_ids=False),
    Dialect.mdx: DialectSpec(Dialect.mdx, AnchorStyle.github, containers=True,
                             mkdocs_blocks=False, inline_ids=False),
}
AUTO = "auto"
DIALECT_NAMES: tuple[str, ...] = (AUTO, *(d.value for d in Dialect))


def dialect_spec(name: str | Dialect) -> DialectSpec:
    """The table row of `name`; an unknown name fails naming the valid ones."""
    try:
        return DIALECTS[Dialect(name)]
    except ValueError:
        raise ValueError(
            f"unknown documentation dialect {name!r}; valid: {', '.join(DIALECT_NAMES)}"
        ) from None


# --- detection -------------------------------------------------------------------

_DOCS_DIR = re.compile(r"^docs_dir:\s*['\"]?([^'\"#\s]+)", re.MULTILINE)
SNIFF_BYTES = 65_536
"""Bytes of each page the content sniff reads (detection stays cheap on huge pages)."""
# A tight `{#id}` heading id is left out: MkDocs, VitePress and Docusaurus all write it.
_SNIFF_MKDOCS = re.compile(
    r"^(?:!!!|\?\?\?\+?) \w|^--8<--|^::: [\w.]+\.[\w.]+\s*$|\{(?::\s*|\s+)#[\w-]+[^{}\n]*\}", re.MULTILINE)
# VitePress (and VuePress) write a space after `:::` (`::: tip`); Docusaurus and Starlight do not.
_SNIFF_VITEPRESS = re.compile(
    r"^::: (?:tip|warning|danger|info|note|details|code-group)\b|^:::(?:code-group|details)\b|^<script setup|^<<< ",
    re.MULTILINE)
_SNIFF_DOCUSAURUS = re.compile(r"^:::(?:note|tip|info|caution|danger|warning|important|success)\b", re.MULTILINE)
_DOCUSAURUS_FRONT_MATTER = re.compile(r"\A---\r?\n(?:(?!---).*\r?\n)*?(?:sidebar_position|sidebar_label|id):")


def detect_dialect(root: Path, pages: Sequence[Path] = ()) -> Dialect:
    """`seeding.dialect: auto`: the generator's config file, else the pages' own syntax.

    Config files, first found wins: `mkdocs.yml` in the root or beside it whose
    `docs_dir` (default `docs`) is the root; `.vitepress/` in the root;
    `docusaurus.config.*` beside the root; `astro.config.*` in the project whose
    `src/content/docs` is the root. Without one (a copied docs folder; `.rst` pages
    are not looked at, they have their own reader): `.mdx` pages → docusaurus where a
    page's front matter is Docusaurus's (`id`, `sidebar_label`, `sidebar_position`), else
    mdx; else the most
    frequent of MkDocs markers (`!!! note`, `--8<--`, `::: a.b`, `{ #id }`), VitePress
    markers (`::: tip` with its space, `::: code-group` / `details`, `<script setup>`,
    `<<< snippet`) and Docusaurus markers (`:::note` without one, a page whose front
    matter has `id`, `sidebar_label` or `sidebar_position`); else (none, or a tie) markdown.
    """
    root = root.resolve()
    pages = [p for p in pages if p.suffix != ".rst"]  # Sphinx pages have their own reader
    for folder in (root, root.parent):
        for name in ("mkdocs.yml", "mkdocs.yaml"):
            config = folder / name
            if config.is_file() and _mkdocs_docs_dir(config) == root:
                return Dialect.mkdocs
    if (root / ".vitepress").is_dir():
        return Dialect.vitepress
    if any(root.parent.glob("docusaurus.config.*")):
        return Dialect.docusaurus
    if root.parts[-3:] == ("src", "content", "docs") and any(root.parents[2].glob("astro.config.*")):
        return Dialect.starlight
    if any(p.suffix == ".mdx" for p in pages):
        # Docusaurus writes MDX too: its front matter (`id`, `sidebar_label`) tells it from others.
        docusaurus = any(_DOCUSAURUS_FRONT_MATTER.match(_sniff(page, root)) for page in pages)
        return Dialect.docusaurus if docusaurus else Dialect.mdx
    markers = {Dialect.mkdocs: 0, Dialect.vitepress: 0, Dialect.docusaurus: 0}
    for page in pages:
        text = _sniff(page, root)
        markers[Dialect.mkdocs] += len(_SNIFF_MKDOCS.findall(text))
        markers[Dialect.vitepress] += len(_SNIFF_VITEPRESS.findall(text))
        markers[Dialect.docusaurus] += len(_SNIFF_DOCUSAURUS.findall(text)) + bool(_DOCUSAURUS_FRONT_MATTER.match(text))
    most = max(markers.values())
    leaders = [dialect for dialect, count in markers.items() if count == most]
    return leaders[0] if most and len(leaders) == 1 else Dialect.markdown


def _sniff(page: Path, root: Path) -> str:
    """The first SNIFF_BYTES of a page, or "" for what the seed refuses to read (it reports
    those itself): a symlink that does not resolve to a file inside `root` (SEEDS_DIR), and
    anything but a regular file (a FIFO would block the open; O_NONBLOCK keeps it from)."""
    try:
        if page.is_symlink() and not page.resolve(strict=True).is_relative_to(root):
            return ""
        handle = os.fdopen(os.open(page, os.O_RDONLY | os.O_NONBLOCK), "rb")
    except (OSError, RuntimeError):  # gone, unreadable, a loop (RuntimeError on 3.11)
        return ""
    with handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return ""
        return handle.read(SNIFF_BYTES).decode("utf-8", "replace")


def _mkdocs_docs_dir(config: Path) -> Path | None:
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # A regex, not YAML: mkdocs.yml uses `!!python/name:` tags safe_load refuses.
    match = _DOCS_DIR.search(text)
    return (config.parent / (match.group(1) if match else "docs")).resolve()


# --- anchors ---------------------------------------------------------------------

_VP_SPECIAL = re.compile(r"[\s~`!@#$%^&*()\-_+=\[\]{}|\\;:\"'“”‘’<>,.?/]+")
_VP_CONTROL = re.compile(r"[\u0000-\u001f]")
_MK_DROP = re.compile(r"[^\w\s-]")
_MK_SEPARATORS = re.compile(r"[-\s]+")
_MK_COUNT = re.compile(r"^(.*)_([0-9]+)$")


def github_slug(text: str) -> str:
    """github-slugger: lower-case, drop every character but letters, digits, marks,
    `_`, `-` and spaces; each space becomes `-`."""
    kept = "".join(
        ch for ch in text.lower()
        if ch.isalnum() or ch in "-_ " or unicodedata.category(ch)[0] == "M"
    )
    return kept.replace(" ", "-")


def vitepress_slug(text: str) -> str:
    """@mdit-vue/shared `slugify` (VitePress): NFKD, accents out, every run of
    special characters (`.` and `_` too) → one `-`, trimmed, a leading digit
    prefixed with `_`, lower-case."""
    value = unicodedata.normalize("NFKD", text)
    value = "".join(ch for ch in value if not "\u0300" <= ch <= "\u036f")
    value = _VP_SPECIAL.sub("-", _VP_CONTROL.sub("", value))
    value = re.sub(r"-{2,}", "-", value).strip("-")
    return re.sub(r"^(\d)", r"_\1", value).lower()


def mkdocs_slug(text: str) -> str:
    """python-markdown `toc.slugify` (MkDocs' default): NFKD to ASCII, drop
    non-word characters, lower-case, runs of spaces and `-` → one `-`."""
    value = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = _MK_DROP.sub("", value).strip().lower()
    return _MK_SEPARATORS.sub("-", value)


_SLUGS = {AnchorStyle.github: github_slug, AnchorStyle.vitepress: vitepress_slug,
          AnchorStyle.mkdocs: mkdocs_slug}


@dataclass(slots=True)
class Anchors:
    """One page's heading anchors, unique the way `style`'s generator makes them."""

    style: AnchorStyle = AnchorStyle.github
    used: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(default_factory=dict)
    skip: dict[str, str] = field(default_factory=dict)
    """MkDocs: an id → a later one of its chain, every id between them taken."""

    def slug(self, text: str) -> str:
        return _SLUGS[self.style](text)

    def add(self, text: str, explicit: str | None = None) -> str:
        if explicit:
            self.used.add(explicit)
            return explicit
        base = self.slug(text)
        if self.style is AnchorStyle.mkdocs:
            return self._mkdocs_unique(base)
        anchor = base
        if self.style is AnchorStyle.vitepress:  # markdown-it-anchor: -1, -2, … untaken
            # The numbers below the last one given for `base` are all taken (`used` only grows):
            # resume there, or 10,000 equal headings cost 50 million lookups.
            number = self.counts.get(base, 1)
            while anchor in self.used:
                anchor, number = f"{base}-{number}", number + 1
            self.counts[base] = number
        else:  # github-slugger: a count per base slug, skipping taken ones
            while anchor in self.used:
                self.counts[base] = self.counts.get(base, 0) + 1
                anchor = f"{base}-{self.counts[base]}"
        self.used.add(anchor)
        return anchor

    def _mkdocs_unique(self, anchor: str) -> str:
        # python-markdown `toc.unique`: `_1`, `_2`, …; an empty id becomes `_1`. Each id's chain
        # of successors is fixed, and `skip` jumps over the part of it known to be taken.
        passed: list[str] = []
        while anchor in self.used or not anchor:
            passed.append(anchor)
            anchor = self.skip.get(anchor) or _mkdocs_next(anchor)
        for taken in passed:
            self.skip[taken] = anchor
        self.used.add(anchor)
        return anchor


def _mkdocs_next(anchor: str) -> str:
    match = _MK_COUNT.match(anchor)
    return f"{match.group(1)}_{int(match.group(2)) + 1}" if match else f"{anchor}_1"


# --- attribute lists -------------------------------------------------------------

# Linear on any text: a run of spaces is tried from its first one only (a later start there
# can only fail as that one did), and a value is one of its forms, never re-split: with a
# bare value able to start with a quote, `{ a=" a=" a=" …` tried 2^n splits (22 took 12 ms).
_ATTR_VALUE = r"""(?>"[^"]*"|'[^']*'|[^\s{}]++)"""
_ATTR = rf"(?:[#.][^\s{{}}]++|[\w-]++={_ATTR_VALUE})"
_ATTR_LIST = re.compile(rf"(?<!\s)\s*\{{:?[ \t]*({_ATTR}(?:[ \t]+{_ATTR})*)[ \t]*\}}")
_HEADING_ATTRS = re.compile(_ATTR_LIST.pattern + r"\s*$")
# `#id`, or the attribute written out (`id=x`, `id="x"`): python-markdown's attr_list sets the
# element's id either way, and the last one written wins (`## Navigation path { id=navigation-path }`).
_ID = re.compile(r"""(?:^|\s)(?:#([^\s{}]+)|id=(?:"([^"]*)"|'([^']*)'|([^\s{}"']+)))""")


def _id_of(attributes: str) -> str | None:
    """The id an attribute list gives its element, else None."""
    found = [next(g for g in m.groups() if g is not None) for m in _ID.finditer(attributes)]
    return found[-1] if found and found[-1] else None


def heading_id(text: str) -> tuple[str, str | None]:
    """`Title {#id .cls}` → ("Title", "id"); a heading without an attribute list → (text, None)."""
    match = _HEADING_ATTRS.search(text)
    if match is None:
        return text, None
    return text[: match.start()].rstrip(), _id_of(match.group(1))


def strip_attr_lists(text: str) -> str:
    """Every `{#id .cls key=v}` attribute list out (their ids are anchors, not text)."""
    return _ATTR_LIST.sub("", text) if "{" in text else text


def inline_ids(text: str) -> list[str]:
    """Ids of inline attribute lists (`**x**{ #id }`, `[](){#id}`)."""
    return [i for m in _ATTR_LIST.finditer(text) if (i := _id_of(m.group(1)))]


# --- rewriting ---------------------------------------------------------------------

_ESM = re.compile(r"^(?:import|export)\b[\s{*]")
_JSX_COMMENT = re.compile(r"^\s*\{/\*.*?\*/\}\s*$")
_JSX_OPEN = re.compile(r"^(\s*)<([A-Z][\w.]*)(?=[\s/>]|$)")
_JSX_CLOSE = re.compile(r"^\s*</([A-Z][\w.]*)\s*>\s*$")
_JSX_ATTR = re.compile(r"(?<![\w:-])([\w:-]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|\{\s*[\"'`]([^\"'`]*)[\"'`]\s*\})")
_CONTAINER = re.compile(r"^(\s*)(:{3,})[ \t]*([A-Za-z][\w-]*)?[ \t]*(?:\[([^\]\n]*)\])?[ \t]*(?:\{[^}\n]*\})?[ \t]*(.*)")
_CONTAINER_CLOSE = re.compile(r"^\s*:{3,}\s*$")
_MKDOCSTRINGS = re.compile(r"^(\s*(?:>\s*)*(?:#{1,6}\s+)?):::[ \t]+([\w.:-]+)\s*$")
# python-markdown's admonition: a type, more words as CSS classes (`!!! note Referencing a resolver`
# shows "Note"), an optional quoted title that may hold quotes itself (`"on the "jsonable" nature"`).
_ADMONITION = re.compile(r"^(\s*)(?:!!!|\?\?\?\+?)[ \t]+([\w-]+)(?:[ \t]+[\w-]+)*(?:[ \t]+\"(.*)\")?[ \t]*$")
# Material's content tabs (pymdownx.tabbed): `=== "pip"`, its text indented below it.
_CONTENT_TAB = re.compile(r"^(\s*)===[+!]?[ \t]+\"([^\"]*)\"\s*$")
_SCRIPT_OPEN = re.compile(r"^\s*<(script|style)\b[^>]*>", re.IGNORECASE)
_TOC_MARKER = re.compile(r"^\s*\[\[toc\]\]\s*$", re.IGNORECASE)
"""`[[toc]]` alone on a line: the page's table of contents (VitePress, VuePress, markdown-it-toc),
not a wikilink to a page called "toc"."""
_INCLUDE = re.compile(r"^\s*(?:--8<--|\{%\s*include\b|<<<\s|!include\b|\{!.*!\}\s*$|\{\*.*\*\}\s*$)")
"""A line the build replaces with a file's text (snippets, Jinja, VitePress' code import, FastAPI's
and Typer's `{* docs_src/app.py hl[3] *}`): the site shows the file, never the line."""
_CODE_IMPORT = re.compile(r"^\s*(?:<<<\s|\{\*)")
"""The includes that bring in a file of code, which writes no heading (no anchors to check)."""
# Text a build hook writes in: Material's documentation shortcodes (`<!-- md:setting x -->` makes
# the option's heading and anchor) and VitePress' `<!--@include: part.md-->`.
_BUILD_MARKER = re.compile(r"<!--\s*(?:md:\w|@include:)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
_LINKS = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\([^)\n]*\)|\[\[[^\]\n]+\]\]|\[[^\]\n]+\]\[[^\]\n]*\]")
_PROPERTY = re.compile(r"^\s*(?:[-*+]\s+)?[A-Za-z][\w.-]*::(?:\s.*)?$")
# A page that states what it is about in a property ("description:: This refers to iOS on
# mobile.") says something of its own: it is not a stub, however short.
_DESCRIPTION = re.compile(r"^\s*(?:[-*+]\s+)?(?:description|summary)::\s*\w", re.IGNORECASE)
_HEADING = re.compile(r"^\s*(?:>\s*)*(?:[-*+]\s+)?#{1,6}(?:\s|$)")
_HTML_ANCHOR = Scan(re.compile(r"<a\s[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE),
                    re.compile(r"<a\s[^>]*", re.IGNORECASE))  # a tag's attributes end at its `>`
_LINK_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*\S+")
_NO_WORDS = re.compile(r"[\W_]+")
MAX_LINK_LIST_BRACKETS = 64
"""`[` in one list item past which it is not read as a list of links (the vendored
documentation has 12 at most), so the link scan of an item stays linear in its length."""
_HIDDEN_CONTAINERS = frozenset({"code-group", "raw", "v-pre"})
STUB_PROSE_CHARS = 200
"""A page whose own prose is shorter than this and which otherwise holds only
structure (includes, directives, link lists, properties, components) is a stub."""


@dataclass(slots=True)
class Rewritten:
    lines: list[str]
    """The page body as plain CommonMark, one output line per input line."""
    anchors: set[str] = field(default_factory=set)
    """Anchors the page defines besides its headings (mkdocstrings objects, inline ids)."""
    structure: int = 0
    """Lines that are includes, directives, link-list items, properties or components."""
    prose_chars: int = 0
    """Characters of words in the rest (headings and code excluded)."""
    described: bool = False
    """The page states what it is about in a `description::` / `summary::` property."""
    generated: bool = False
    """Part of the page is written by its build (an include, a directive, a shortcode), so the
    built page may have anchors that this reading cannot see."""

    @property
    def stub(self) -> bool:
        """Nothing to say on its own: next to no prose, and only structure besides it."""
        if self.described:
            return False
        return self.prose_chars < STUB_PROSE_CHARS and (self.structure > 0 or self.prose_chars == 0)


@dataclass(slots=True)
class _Open:
    """An open JSX component or container and the indentation its content drops."""

    name: str
    strip: int | None = None


def rewrite(lines: Sequence[str], spec: DialectSpec, mdx: bool) -> Rewritten:
    """The body's dialect syntax as plain CommonMark (module doc), line for line."""
    return _Rewriter(spec, mdx).run(list(lines))


class _Rewriter:
    def __init__(self, spec: DialectSpec, mdx: bool) -> None:
        self.spec = spec
        self.mdx = mdx
        self.out = Rewritten([])
        self.stack: list[_Open] = []
        self.unclosed = False
        """A JSX tag was never closed: MDX would not build the page; later tags are read as text."""

    # One pass; a block construct may consume following lines (returns the next index).
    def run(self, lines: list[str]) -> Rewritten:
        fence: str | None = None
        i = 0
        while i < len(lines):
            line = self._dedent(lines[i])
            fence_match = FENCE.match(line)
            if fence is not None:
                self._emit(line, prose=True)  # code is content too
                if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                    fence = None
                i += 1
                continue
            if fence_match is not None:
                fence = fence_match.group(1)
                self._emit(line)
                i += 1
                continue
            i = self._line(lines, i, line)
        return self.out

    def _emit(self, line: str, *, structure: bool = False, prose: bool = False) -> None:
        self.out.lines.append(line)
        if structure:
            self.out.structure += 1
        elif prose:
            self.out.prose_chars += len(_NO_WORDS.sub("", line))

    def _blank(self, count: int = 1, *, structure: bool = True) -> None:
        for _ in range(count):
            self._emit("", structure=structure)

    def _dedent(self, line: str) -> str:
        """Inside a component or admonition: its content's common indentation dropped."""
        if not self.stack or not line.strip():
            return line if line.strip() else ""
        top = self.stack[-1]
        expanded = _expand_leading_tabs(line)
        indent = len(expanded) - len(expanded.lstrip(" "))
        if top.strip is None:
            top.strip = indent
        return expanded[min(indent, top.strip):]

    def _line(self, lines: list[str], i: int, line: str) -> int:
        stripped = line.strip()
        if not stripped:
            self._emit("")
            return i + 1
        script = _SCRIPT_OPEN.match(line)
        if script is not None:
            return self._drop_until(lines, i, re.compile(rf"</{script.group(1)}\s*>", re.IGNORECASE))
        if _TOC_MARKER.match(line):
            self._blank()
            return i + 1
        if self.mdx:
            if _ESM.match(line):
                return self._drop_statement(lines, i)
            if stripped.startswith("{/*"):
                return self._drop_until(lines, i, re.compile(r"\*/\s*\}"))
            close = _JSX_CLOSE.match(line)
            if close is not None:
                self._pop(close.group(1))
                self._blank()
                return i + 1
            opened = None if self.unclosed else _JSX_OPEN.match(line)
            if opened is not None:
                return self._component(lines, i, opened)
        if self.spec.mkdocs_blocks:
            directive = _MKDOCSTRINGS.match(line)
            if directive is not None:
                return self._mkdocstrings(lines, i, directive)
            admonition = _ADMONITION.match(line)
            if admonition is not None:
                indent, kind, title = admonition.groups()
                self._emit(f"{indent}{_label(kind, title)}", structure=True)
                return self._admonition_body(lines, i + 1, len(indent))
            tab = _CONTENT_TAB.match(line)
            if tab is not None:  # its label over its text, as a TabItem reads ("pip:")
                indent, label = tab.groups()
                self._emit(f"{indent}{label.strip()}:", structure=True)
                return self._admonition_body(lines, i + 1, len(indent))
        if self.spec.containers or self.mdx:
            if _CONTAINER_CLOSE.match(line) and self.stack and self.stack[-1].name.startswith(":"):
                self.stack.pop()
                self._blank()
                return i + 1
            container = _CONTAINER.match(line)
            if container is not None and container.group(3):
                indent, colons, kind, bracket, rest = container.groups()
                title = (bracket or rest or "").strip()
                self._emit(indent + _container_label(kind, title), structure=True)
                # No dedent of its own: a container's text is not indented.
                self.stack.append(_Open(":" + colons, strip=self.stack[-1].strip if self.stack else 0))
                return i + 1
        self._prose_line(line)
        return i + 1

    def _prose_line(self, line: str) -> None:
        if self.spec.inline_ids and "{" in line:
            self.out.anchors.update(inline_ids(line))
        if "<a" in line:  # `<a id="x"></a>`: an anchor every generator keeps
            self.out.anchors.update(_HTML_ANCHOR.findall(line))
        if "<!--" in line and _BUILD_MARKER.search(line):
            self.out.generated = True
        if _DESCRIPTION.match(line):
            self.out.described = True
            self._emit(line, structure=True)
        elif _INCLUDE.match(line):  # not read in place (service/ingest/includes.py): no words of the page
            self.out.generated |= _CODE_IMPORT.match(line) is None  # a file of code writes no heading
            self._blank(1)
        elif _PROPERTY.match(line):
            self._emit(line, structure=True)
        elif _HEADING.match(line) or _LINK_DEF.match(line):
            self._emit(line)
        elif (item := _LIST_ITEM.match(line)) is not None and _link_list_item(item.group(1)):
            self._emit(line, structure=True)
        else:
            self._emit(line, prose=True)

    def _drop_until(self, lines: list[str], i: int, end: re.Pattern[str]) -> int:
        j = i
        while j < len(lines) and end.search(lines[j]) is None:
            j += 1
        j = min(j, len(lines) - 1)
        self._blank(j - i + 1)
        return j + 1

    def _drop_statement(self, lines: list[str], i: int) -> int:
        """An ESM statement: up to its line where brackets balance and it does not go on."""
        depth, j = 0, i
        while j < len(lines):
            depth += sum(lines[j].count(c) for c in "({[") - sum(lines[j].count(c) for c in ")}]")
            if depth <= 0 and not lines[j].rstrip().endswith((",", "=", "from")):
                break
            j += 1
        j = min(j, len(lines) - 1)
        self._blank(j - i + 1)
        return j + 1

    def _component(self, lines: list[str], i: int, opened: re.Match[str]) -> int:
        """`<Name attr="v">` (its attributes may run over lines): a label line; `/>` drops it."""
        indent, name = opened.group(1), opened.group(2)
        parts, j = [lines[i]], i
        end, state = _tag_end(lines[i], opened.end())
        while end is None and j + 1 < len(lines):  # each line scanned once, from where it stopped
            j += 1
            parts.append(lines[j])
            end, state = _tag_end(lines[j], 0, state)
        if end is None:  # never closed: not a component after all, nor is any later tag
            self.unclosed = True  # (each would scan to the page's end again: quadratic)
            self._prose_line(lines[i])
            return i + 1
        end += sum(len(part) + 1 for part in parts[:-1])
        text = "\n".join(parts)
        attrs = text[opened.end() : end]
        self_closing = attrs.rstrip().endswith("/")
        rest = text[end + 1 :].strip()
        self._blank(j - i)  # the tag's own continuation lines
        if self_closing:
            self._emit(rest, prose=bool(rest), structure=not rest)
            return j + 1
        closing = f"</{name}>"
        inline_close = rest.endswith(closing)
        if inline_close:
            rest = rest[: -len(closing)].strip()
        label = _component_label(name, _attributes(attrs))
        line = " ".join(part for part in (label, rest) if part)
        if line:
            self._emit(indent.replace("\t", "    ") + line, prose=bool(rest), structure=not rest)
        else:
            self._blank()
        if not inline_close:
            self.stack.append(_Open(name))
        return j + 1

    def _pop(self, name: str) -> None:
        for at in range(len(self.stack) - 1, -1, -1):
            if self.stack[at].name == name:
                del self.stack[at:]
                return

    def _mkdocstrings(self, lines: list[str], i: int, directive: re.Match[str]) -> int:
        """`::: pkg.Object` (+ its indented options): the object's name and its anchor."""
        prefix, ident = directive.groups()
        self.out.anchors.add(ident)
        self.out.generated = True
        self._emit(f"{prefix}`{ident}`" + (f" {{#{ident}}}" if "#" in prefix else ""), structure=True)
        j = i + 1
        while j < len(lines) and lines[j].strip() and lines[j][:1] in " \t":
            j += 1  # its options block: configuration, not text
        self._blank(j - i - 1)
        return j

    def _admonition_body(self, lines: list[str], j: int, indent: int) -> int:
        """An admonition's text: the lines indented past its marker, dedented (below)."""
        start = j
        while j < len(lines):
            line = lines[j]
            width = len(_expand_leading_tabs(line)) - len(_expand_leading_tabs(line).lstrip(" "))
            if line.strip() and width <= indent:
                break
            j += 1
        if j > start:
            body = textwrap.dedent("\n".join(_expand_leading_tabs(x) for x in lines[start:j])).split("\n")
            nested = _Rewriter(self.spec, self.mdx).run(body)
            self.out.lines.extend(" " * indent + x if x else x for x in nested.lines)
            self.out.anchors |= nested.anchors
            self.out.structure += nested.structure
            self.out.prose_chars += nested.prose_chars
            self.out.generated |= nested.generated
        return j


def _link_list_item(item: str) -> bool:
    """A list item that is only links (three word characters besides them at most). `_LINKS`
    rescans the item from every `[`; past `MAX_LINK_LIST_BRACKETS` the item is prose."""
    return item.count("[") <= MAX_LINK_LIST_BRACKETS and _LINKS.search(item) is not None \
        and len(_NO_WORDS.sub("", _LINKS.sub("", item))) <= 3


def _expand_leading_tabs(line: str) -> str:
    body = line.lstrip(" \t")
    return line[: len(line) - len(body)].expandtabs(4) + body


_TAG_SPECIAL = re.compile(r"[\"'`{}>]")
_TagState = tuple[str | None, int]
"""Inside which quote, and how many braces deep, a JSX tag's scan is."""


def _tag_end(text: str, start: int, state: _TagState = (None, 0)) -> tuple[int | None, _TagState]:
    """Offset of the `>` closing a JSX tag that starts before `start` (quotes and braces
    skipped), else None and the state to resume from on the next line."""
    quote, depth = state
    for match in _TAG_SPECIAL.finditer(text, start):
        ch = match.group()
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in "\"'`":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth <= 0:  # `>`
            return match.start(), (quote, depth)
    return None, (quote, depth)


def _attributes(text: str) -> dict[str, str]:
    return {m.group(1): next(g for g in m.groups()[1:] if g is not None) for m in _JSX_ATTR.finditer(text)}


_LABELLED = ("title", "label", "summary", "heading")
_ASIDES = frozenset({"Aside", "Callout", "Admonition", "Note", "Tip", "Warning", "Info", "Caution", "Danger"})


def _component_label(name: str, attrs: dict[str, str]) -> str:
    title = next((attrs[k].strip() for k in _LABELLED if attrs.get(k, "").strip()), "")
    if name in _ASIDES:
        kind = attrs.get("type") or ("note" if name in ("Aside", "Callout", "Admonition") else name)
        return _label(kind, title)
    return f"{title}:" if title else ""


def _container_label(kind: str, title: str) -> str:
    if kind in _HIDDEN_CONTAINERS:
        return ""
    if kind == "details":
        return title or "Details"
    return _label(kind, title)


def _label(kind: str, title: str | None) -> str:
    label = kind.replace("-", " ").capitalize()
    return f"{label}: {title}" if title else f"{label}:"

