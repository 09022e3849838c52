"""reStructuredText (Sphinx) pages → the `ParsedPage` the Markdown reader gives.

docutils parses each page (what Sphinx itself uses); the doctree is written out
as Markdown, because every later step (chunker, snippets, context passages)
reads a document's content as Markdown. So nothing downstream changes:
sections, blocks, anchors and links have the same types as for `.md` pages.

Read as Sphinx renders it:
- **sections** → `#`… headings (nesting from docutils' adornment order); the
  page title is the first section's title. A section's anchor is its own
  docutils id (`make_id` of the title, `id1`… for a repeated title, as Sphinx's
  HTML has it); a `.. _label:` before a section is an anchor of the page too.
- **code** (`::` literal blocks, `code-block`, `code`, `sourcecode`, doctest
  blocks, `testcode`) → fenced code, kept verbatim as code.
- **admonitions** (`note`, `warning`, `tip`, … and `admonition:: Title`,
  `seealso`) → a quote that starts with its title: `> Note: …`; `versionadded`
  / `versionchanged` / `deprecated` keep their text: "Added in version 2.1: …".
- **cross-references**: `:ref:`label`` links to the section that carries the
  label (across pages; the section title is the link text unless one is
  given), `:doc:`path`` to the page (relative to the current page, or from the
  root with a leading `/`), toctree entries are links to their pages; all are
  checked by the link check. Python-object roles (`:class:`, `:meth:` …) read
  as inline code, as Sphinx shows them (`~a.b.C` → `C`).
- **Sphinx-only directives** that need the Python source or other files
  (`autoclass`, `automodule`, `literalinclude`, `include`, …) or only steer the
  build (`toctree`, `index`, `module`, `highlight`, …) are skipped; the page
  never fails on them and no file outside the page is read (an autodoc entry,
  `autoclass:: a.B`, keeps the object's name as its signature). An unknown
  directive is dropped (docutils' behaviour), never an error.
docutils never writes to stderr or reads a file here: reports are off
(`report_level`/`halt_level` 5), file insertion and `raw` are disabled, and no
config file is read.

Cross-references need the other pages (a label's section and title), so a
corpus is read in two steps, as Sphinx does: `read_rst` parses one page into
a draft (cached on its text) that names its labels and title and keeps each
`:ref:`/`:doc:` as a placeholder; `parse_rst_page` fills them in from the
`SphinxProject` of all drafts.
"""

from __future__ import annotations

import atexit
import copy
import multiprocessing
import multiprocessing.pool
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, cast

from docutils import frontend, nodes, utils
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, Parser, directives, roles
from docutils.readers.standalone import Reader

from service.ingest.dialects import STUB_PROSE_CHARS
from service.ingest.parse import (
    SECTION_LEVELS,
    Block,
    BlockKind,
    Link,
    ParsedPage,
    Section,
    anchor_slug,
    name_slug,
    remember,
)


class RstError(ValueError):
    """A page docutils cannot read (the reason names why)."""


@dataclass(frozen=True, slots=True)
class LabelTarget:
    """Where a `:ref:` label points: a page, the anchor to open, the section title."""

    docname: str
    anchor: str
    title: str | None
    """The labelled section's title (`None`: the label is not on a section)."""


@dataclass(frozen=True, slots=True)
class SphinxProject:
    """What a page's cross-references need from the others."""

    labels: Mapping[str, LabelTarget] = field(default_factory=dict)
    titles: Mapping[str, str] = field(default_factory=dict)
    """docname → page title, for every page of the corpus."""


@dataclass(frozen=True, slots=True)
class _XRefUse:
    kind: str  # "ref" | "doc"
    target: str
    title: str | None
    """The explicit title (`:ref:`text <label>``), else None."""
    line: int


@dataclass(frozen=True, slots=True)
class RstDraft:
    """One page parsed, cross-references still open (see module doc)."""

    docname: str
    page: ParsedPage
    """Every string may hold placeholders `\\ue000N\\ue001` for `xrefs[N]`."""
    xrefs: tuple[_XRefUse, ...]
    labels: Mapping[str, LabelTarget]
    title: str | None


# --- names and slugs ------------------------------------------------------------


def docname_of(relative: PurePosixPath) -> str:
    """`user/quickstart.rst` → `user/quickstart` (Sphinx's document name)."""
    return relative.with_suffix("").as_posix()


def rst_slug(relative: PurePosixPath) -> str:
    """`user/Quick Start.rst` → `user/quick-start`; `index.rst` → `index`, `sub/index.rst` → `sub`."""
    parts = list(relative.with_suffix("").parts)
    if len(parts) > 1 and parts[-1] == "index":
        parts.pop()  # a folder's index page is the folder's page (Sphinx serves it as `sub/`)
    return "/".join(name_slug(p) or "-" for p in parts)


def _docname_join(base: str, target: str) -> str:
    """Sphinx's rule: `/x` from the root, else relative to the current page's folder."""
    if target.startswith("/"):
        return posixpath.normpath(target).lstrip("/")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(base), target))
    return joined.lstrip("/")


def _href(base: str, docname: str, anchor: str = "") -> str:
    """A link from page `base` to `docname` (and anchor), as a relative `.rst` path."""
    fragment = f"#{anchor}" if anchor else ""
    if docname == base:
        return fragment or posixpath.basename(docname) + ".rst"
    start = posixpath.dirname(base) or "."
    return posixpath.relpath(docname + ".rst", start) + fragment


# --- docutils: nodes, roles and directives -------------------------------------


class _XRef(nodes.Inline, nodes.TextElement):
    """A Sphinx cross-reference role (`:ref:`, `:doc:`, `:class:` …) as written."""


class _TocTree(nodes.General, nodes.Element):
    """A toctree: no text, only links to its entries."""


class _Callout(nodes.General, nodes.Element):
    """`versionadded` & co. (`label` attribute): a paragraph that starts with its label."""


class _Signature(nodes.General, nodes.TextElement):
    """An object description's signature (`.. function:: get(url)`)."""


_EXPLICIT_TITLE = re.compile(r"^(.+?)\s*(?<!\x00)<([^<]*?)>$", re.DOTALL)
_PLACEHOLDER = re.compile("\ue000(\\d+)\ue001")
_PRIVATE = re.compile("[\ue000\ue001]")


def _split_title(text: str) -> tuple[str | None, str]:
    """`text <target>` → (text, target), `target` → (None, target); whitespace runs (a role
    wrapped over lines) become one space."""
    match = _EXPLICIT_TITLE.match(text)
    if match is None:
        return None, " ".join(utils.unescape(text).split())
    return " ".join(utils.unescape(match.group(1)).split()), " ".join(utils.unescape(match.group(2)).split())


RoleResult = tuple[list[nodes.Node], list[nodes.system_message]]


def _xref_role(kind: str) -> Callable[..., RoleResult]:
    def role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
             options: Any = None, content: Any = None) -> RoleResult:
        title, target = _split_title(text)
        # The target is the text when no title is given, as in Sphinx: a section title's id
        # (`Using :doc:`python:library/pdb` with pytest` → `#using-python-library-pdb-with-pytest`).
        node = _XRef(rawtext, title or target, kind=kind, target=target, explicit=title is not None)
        node.line = lineno
        return [node], []

    return role


def _object_display(role: str, text: str) -> str:
    """What Sphinx shows for `:meth:`~a.B.c`` and the like (`c()`)."""
    title, target = _split_title(text)
    if title is not None:
        return title
    shown = target.lstrip(".")
    if shown.startswith("~"):
        shown = shown[1:].rsplit(".", 1)[-1]
    if role.rsplit(":", 1)[-1] in ("func", "meth") and not shown.endswith(")"):
        shown += "()"
    return shown


def _text_role(style: str) -> Callable[..., RoleResult]:
    """A role shown as its text: `code` (objects, files), `plain` (terms, labels), `emphasis`."""

    def role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
             options: Any = None, content: Any = None) -> RoleResult:
        shown = _object_display(name, text) if style == "code" else (_split_title(text)[0]
                                                                      or _split_title(text)[1])
        if name == "abbr":
            shown = shown.split(" (", 1)[0]
        elif name == "menuselection":
            shown = shown.replace("-->", "‣")
        elif name == "guilabel":
            shown = shown.replace("&&", "\0").replace("&", "").replace("\0", "&")
        node: nodes.Node
        if style == "code":
            node = nodes.literal(rawtext, shown)
        elif style == "emphasis":
            node = nodes.emphasis(rawtext, shown)
        else:
            node = nodes.Text(shown)
        return [node], []

    return role


class _AnyOptions(dict[str, Callable[[str], Any]]):
    """Every option is accepted (as its text): an unknown option never fails a directive.
    Never empty: docutils reads options only when a directive has some."""

    def __init__(self) -> None:
        super().__init__(name=directives.unchanged, **{"class": directives.unchanged})

    def __missing__(self, key: str) -> Callable[[str], Any]:
        return directives.unchanged


class _Skip(Directive):
    """Sphinx-only: needs the Python source or another file, or steers the build only."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec: ClassVar[dict[str, Callable[[str], Any]]] = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        # Invisible, as the index entry autodoc starts with: a `.. _label:` just
        # before stays where it is instead of moving on to the next section.
        return [nodes.comment(skipped=self.name)]


class _Keep(_Skip):
    """Content kept as the page's own (`only`, tabs, cards …); an argument is its title
    (not for `only` / `ifconfig`, whose argument is a build condition)."""

    def run(self) -> list[nodes.Node]:
        box = nodes.container()
        if self.arguments and self.name not in ("only", "ifconfig"):
            text, _ = self.state.inline_text(self.arguments[0], self.lineno)
            box += nodes.rubric(self.arguments[0], "", *text)
        self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


class _TocTreeDirective(_Skip):
    def run(self) -> list[nodes.Node]:
        node = _TocTree()
        node["entries"] = [
            (self.content_offset + i + 1, line.strip())
            for i, line in enumerate(self.content) if line.strip()
        ]
        node["glob"] = "glob" in self.options
        return [node]


class _CodeBlock(_Skip):
    """`code-block`, `sourcecode`, `code`, `testcode` …: the code as written."""

    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        language = self.arguments[0].strip() if self.arguments else ""
        if self.name == "productionlist" and self.arguments:
            code, language = self.arguments[0], ""
        node = nodes.literal_block(code, code, language=language)
        node.line = self.lineno
        self.add_name(node)
        return [node]


_VERSION_LABELS = {
    "versionadded": "Added in version {}",
    "versionchanged": "Changed in version {}",
    "deprecated": "Deprecated since version {}",
    "versionremoved": "Removed in version {}",
}


class _Versioned(_Skip):
    """`versionadded:: 2.1 text`: Sphinx shows "Added in version 2.1: text"."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        version, text = self.arguments[0], self.arguments[1] if len(self.arguments) > 1 else ""
        node = _Callout(label=_VERSION_LABELS[self.name].format(version.strip()))
        if text.strip():
            inline, _ = self.state.inline_text(" ".join(text.split()), self.lineno)
            node += nodes.paragraph(text, "", *inline)
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


class _SeeAlso(_Skip):
    def run(self) -> list[nodes.Node]:
        node = nodes.admonition()
        node += nodes.title("See also", "See also")
        if self.arguments:
            inline, _ = self.state.inline_text(self.arguments[0], self.lineno)
            node += nodes.paragraph(self.arguments[0], "", *inline)
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


class _Centered(_Skip):
    def run(self) -> list[nodes.Node]:
        inline, _ = self.state.inline_text(self.arguments[0] if self.arguments else "", self.lineno)
        return [nodes.paragraph("", "", *inline)]


class _ObjectDescription(_Skip):
    """`.. function:: get(url, **kwargs)` with its description: signature and text kept."""

    def run(self) -> list[nodes.Node]:
        box = nodes.container()
        for signature in (self.arguments[0] if self.arguments else "").split("\n"):
            if signature.strip():
                box += _Signature(signature, signature.strip())
        self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


class _AutoDoc(_Skip):
    """`.. autoclass:: flask.views.MethodView`: the object's text is in the Python source, not
    read here; its name is shown as Sphinx heads the entry, as a signature (the page defines it:
    service/ingest/identifiers.py)."""

    def run(self) -> list[nodes.Node]:
        names = (self.arguments[0] if self.arguments else "").split()
        return [*super().run(), *(_Signature(name, name) for name in names[:1])]


_AUTODOC = ["autoclass", "autofunction", "autoexception", "automethod", "autoattribute", "autodata", "autoproperty", "autodecorator"]
_SKIPPED = ["automodule", "autosummary", "automodsumm", "autoprogram", "autoclasstoc", "autotypeddict", "autopydantic_model", "autopydantic_settings", "module", "currentmodule", "py:module", "py:currentmodule", "index", "highlight", "sectionauthor", "moduleauthor", "codeauthor", "tabularcolumns", "literalinclude", "include", "raw", "testsetup", "testcleanup", "todo", "todolist", "rst-class", "default-domain", "graphviz", "graph", "digraph", "inheritance-diagram", "plot", "mermaid", "uml", "jinja", "contents", "sectnum", "header", "footer", "target-notes", "program", "option-list", "meta"]
_KEPT = ["only", "ifconfig", "hlist", "glossary", "tab", "tabs", "group-tab", "code-tab", "tab-set", "tab-item", "card", "grid", "grid-item", "grid-item-card", "dropdown", "div"]
_CODE = ["code-block", "sourcecode", "code", "testcode", "testoutput", "doctest", "productionlist"]
_OBJECTS = [
    f"{domain}{kind}"
    for domain in ("", "py:")
    for kind in ("function", "class", "method", "classmethod", "staticmethod", "attribute",
                 "data", "exception", "decorator", "decoratormethod", "property", "type")
] + [
    f"{domain}:{kind}"
    for domain in ("c", "cpp", "js")
    for kind in ("function", "class", "struct", "member", "macro", "type", "var", "data",
                 "method", "attribute", "module", "enum", "enumerator")
] + ["describe", "object", "envvar", "option", "cmdoption", "confval", "rst:directive", "rst:role", "rst:directive:option"]

_XREF_ROLES = ("ref", "doc", "std:ref", "std:doc")
_CODE_ROLES = [
    f"{domain}{kind}"
    for domain in ("", "py:")
    for kind in ("class", "meth", "func", "attr", "exc", "mod", "obj", "data", "const", "type")
] + [
    f"{domain}:{kind}"
    for domain in ("c", "cpp", "js")
    for kind in ("func", "class", "struct", "member", "macro", "type", "var", "data", "meth",
                 "attr", "mod", "expr", "texpr", "enum", "enumerator", "expr")
] + ["any", "envvar", "option", "confval", "file", "samp", "kbd", "mimetype", "regexp", "command", "makevar", "rst:dir", "rst:role"]
_PLAIN_ROLES = ["term", "abbr", "guilabel", "menuselection", "program", "newsgroup", "manpage", "download", "numref", "keyword", "token", "dfn", "std:term"]


def _register() -> None:
    """Roles and directives Sphinx adds to docutils (global docutils registries)."""
    for name in _XREF_ROLES:
        roles.register_local_role(name, cast(Any, _xref_role(name.rsplit(":", 1)[-1])))
    for name in _CODE_ROLES:
        roles.register_local_role(name, cast(Any, _text_role("code")))
    for name in _PLAIN_ROLES:
        roles.register_local_role(name, cast(Any, _text_role("emphasis" if name == "dfn" else "plain")))
    table: list[tuple[Iterable[str], type[Directive]]] = [
        (_SKIPPED, _Skip), (_AUTODOC, _AutoDoc), (_KEPT, _Keep), (_CODE, _CodeBlock), (_OBJECTS, _ObjectDescription),
        (["toctree"], _TocTreeDirective), (_VERSION_LABELS, _Versioned),
        (["seealso"], _SeeAlso), (["centered"], _Centered),
    ]
    for names, directive in table:
        for name in names:
            directives.register_directive(name, directive)


_register()

LINE_LENGTH_LIMIT = 100_000
"""docutils refuses a page with a longer line (its default, 10,000, drops ordinary pages with a
long generated line; inline parsing time grows faster than linearly: 1.2 s for 100,000)."""

# Sphinx's docutils settings where they change the doctree (no doctitle
# promotion: the first section stays a section; `id1`… for repeated titles),
# and nothing read, written or raised on a bad page.
_SETTINGS = frontend.get_default_settings(Parser, Reader)
for _key, _value in {
    "report_level": 5, "halt_level": 5, "_disable_config": True, "file_insertion_enabled": False,
    "raw_enabled": False, "doctitle_xform": False, "sectsubtitle_xform": False,
    "auto_id_prefix": "id", "smart_quotes": False, "syntax_highlight": "none",
    "pep_references": None, "rfc_references": None, "warning_stream": None,
    "input_encoding": "utf-8", "exit_status_level": 5, "traceback": True,
    "line_length_limit": LINE_LENGTH_LIMIT,
}.items():
    setattr(_SETTINGS, _key, _value)


def _doctree(text: str) -> nodes.document:
    try:
        document = publish_doctree(text, settings=copy.copy(_SETTINGS))
    except RecursionError:
        raise RstError("reStructuredText nested too deeply to read") from None
    except Exception as err:  # a parser bug on odd input: the page's reason, not a failed seed
        raise RstError(f"reStructuredText could not be read ({type(err).__name__}: {err})") from None
    if any(isinstance(c, nodes.system_message) and "line-length-limit" in c.astext()
           for c in document.children):  # docutils then returns nothing of the page
        raise RstError(f"a line longer than {LINE_LENGTH_LIMIT:,} characters")
    return document


# --- labels -----------------------------------------------------------------------


def _labels(document: nodes.document, docname: str) -> dict[str, LabelTarget]:
    """Explicit targets (`.. _label:`) as Sphinx's std domain records them."""
    labels: dict[str, LabelTarget] = {}
    for name, explicit in document.nametypes.items():
        labelid = document.nameids.get(name)
        if not explicit or labelid is None or labelid not in document.ids:
            continue
        node = document.ids[labelid]
        if isinstance(node, nodes.target) and "refid" in node:
            node = document.ids.get(node["refid"], node)
        if "refuri" in node or isinstance(node, (nodes.footnote, nodes.citation)):
            continue  # an external link target or a footnote, not a place in the docs
        if isinstance(node, nodes.section) and node["ids"]:
            labels[name] = LabelTarget(docname, node["ids"][0], _title_text(node[0]))
        else:
            labels[name] = LabelTarget(docname, labelid, None)
    return labels


def _anchors(document: nodes.document) -> frozenset[str]:
    """Every id the rendered page carries (external link targets have none)."""
    return frozenset(
        key for key, node in document.ids.items()
        if not isinstance(node, (nodes.system_message, nodes.problematic))
        and not (isinstance(node, nodes.target) and ("refuri" in node or "refname" in node))
    )


# --- rendering: doctree → Markdown ------------------------------------------------

_NO_WORDS = re.compile(r"[\W_]+")
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|])")
_LONE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_LINE_START = re.compile(r"^(?:([#>+=~-])|(\d{1,9})([.)]))")
_SKIP_NODES = (
    nodes.comment, nodes.system_message, nodes.target, nodes.substitution_definition,
    nodes.raw, nodes.pending, nodes.docinfo, nodes.decoration, nodes.transition, nodes.image,
    nodes.footnote_reference, nodes.citation_reference, nodes.substitution_reference,
    nodes.meta if hasattr(nodes, "meta") else nodes.comment,
)
_ADMONITION_LABELS = {
    "attention": "Attention", "caution": "Caution", "danger": "Danger", "error": "Error",
    "hint": "Hint", "important": "Important", "note": "Note", "tip": "Tip", "warning": "Warning",
}


def _escape(text: str) -> str:
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return _LONE_UNDERSCORE.sub(r"\\_", text)


def _line_start(text: str) -> str:
    """A paragraph that would open a Markdown heading, quote or list stays a paragraph."""
    match = _LINE_START.match(text)
    if match is None:
        return text
    if match.group(1):
        return "\\" + text
    return text[: match.end(2)] + "\\" + text[match.end(2):]


def _code_span(text: str) -> str:
    text = " ".join(text.split())
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _fence(code: str, language: str) -> str:
    longest = max((len(m) for m in re.findall(r"^\s*(`{3,})", code, re.MULTILINE)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line.strip() else line.rstrip() for line in text.split("\n"))


_UNRESOLVED = re.compile(
    r"^(?::[\w.:+-]+:)?`(?P<inner>.+)`(?::[\w.:+-]+:)?_{0,2}$|^(?P<name>[\w.-]+)_{1,2}$", re.DOTALL)


def _problematic_text(raw: str) -> str:
    """What a reader sees of markup docutils could not resolve: an unknown role's text, a
    reference's words; an undefined substitution (`|version|`, set in conf.py) reads as nothing."""
    match = _UNRESOLVED.match(raw)
    if match is None:
        return ""
    if match["name"]:
        return str(match["name"])
    title, target = _split_title(match["inner"])
    return title or target


def _word_chars(text: str) -> int:
    return len(_NO_WORDS.sub("", text))


def _link_only(item: nodes.Element) -> bool:
    """A list item that is only a link (a link list's entry: structure, not prose)."""
    if len(item.children) != 1 or not isinstance(item[0], nodes.paragraph):
        return False
    links = [c for c in item[0].children if isinstance(c, (nodes.reference, _XRef))]
    rest = "".join(c.astext() for c in item[0].children if c not in links)
    return bool(links) and _word_chars(rest) <= 3


def _plain_of(node: nodes.Node, code: bool = False) -> str:
    """The words a reader sees, without code (as the Markdown reader's plain text); with `code`,
    inline literals keep their text (a section title, which Sphinx shows whole)."""
    if isinstance(node, nodes.Text):
        return node.astext()  # backslash-escapes resolved
    if isinstance(node, (*_SKIP_NODES, nodes.literal_block, nodes.doctest_block, nodes.math_block,
                         _TocTree)):
        return ""
    if isinstance(node, nodes.literal):
        return node.astext() if code else " "
    if isinstance(node, nodes.problematic):
        return _problematic_text(node.astext())
    if isinstance(node, _XRef):
        if node["explicit"]:
            return node.astext()
        # A title names what the role points at; in running text it is filled in later.
        return _shown_target(str(node["kind"]), str(node["target"])) if code else ""
    assert isinstance(node, nodes.Element)
    joiner = "\n" if not isinstance(node, nodes.TextElement) else ""
    return joiner.join(_plain_of(child, code) for child in node.children)


def _title_text(title: nodes.Node) -> str:
    """A section title as the site shows it and as headings are named everywhere (the Markdown
    reader keeps inline code in a heading too): "Using async and await", not "Using and"."""
    return " ".join(_plain_of(title, code=True).split())


@dataclass(slots=True)
class _Out:
    kind: BlockKind
    text: str
    plain: str
    items: tuple[str, ...] = ()
    unsaid: int = 0
    """Word characters of its link-only list items (not prose of the page's own)."""


class _Renderer:
    """Walks a doctree: sections → `Section`s, body elements → Markdown blocks."""

    def __init__(self, docname: str) -> None:
        self.docname = docname
        self.path: list[str | None] = [None]
        self.anchor = ""
        self.blocks: list[Block] = []
        self.sections: list[Section] = []
        self.headings: list[str] = []
        self.body: list[str] = []
        self.plain: list[str] = []
        self.h1: str | None = None
        self.first_paragraph = ""
        self.first_text = ""
        self.links: list[Link] = []
        self.xrefs: list[_XRefUse] = []
        self.prose = 0
        """Word characters of the page's own text (headings out, code in), as dialects.py counts."""
        self.structure = 0
        """Skipped directives (includes, autodoc, toctrees) and link-only list items."""

    # sections ---------------------------------------------------------------
    def close(self) -> None:
        if self.blocks:
            self.sections.append(Section(tuple(self.path), self.anchor, tuple(self.blocks)))
        self.blocks = []

    def document(self, document: nodes.document) -> None:
        for child in document.children:
            self.element(child, 0)
        self.close()
        self.structure += sum(1 for n in document.findall(nodes.comment) if n.get("skipped"))
        self.structure += sum(1 for _ in document.findall(_TocTree))
        if not self.sections and self.h1 is not None:
            # A page that is only its title (its text comes from a skipped
            # include): kept for links and /documents, with nothing to chunk.
            self.sections.append(Section((self.h1,), self.anchor, ()))

    def section(self, node: nodes.section, depth: int) -> None:
        title = node[0] if node.children and isinstance(node[0], nodes.title) else None
        text = _title_text(title) if title is not None else ""
        anchor = node["ids"][0] if node["ids"] else ""
        heading = "#" * min(depth, 6) + " " + (self.inline(title) if title is not None else "")
        if anchor and anchor != anchor_slug(text):
            # The id as a custom heading id: the body read again as Markdown (the
            # chunker, when its parse cache has let this page go) finds the same anchor.
            heading += f" {{#{anchor}}}"
        self.headings.append(text)
        self.body.append(heading)
        if self.h1 is None:
            self.h1 = text
        if depth > SECTION_LEVELS:  # deeper headings stay in their section's text
            self.blocks.append(Block("para", heading))
            self.plain.append(text)
        else:
            self.close()
            del self.path[depth - 1 :]
            self.path.append(text)
            self.anchor = anchor
        for child in node.children[1 if title is not None else 0 :]:
            self.element(child, depth)

    def element(self, node: nodes.Node, depth: int) -> None:
        if isinstance(node, nodes.section):
            self.section(node, depth + 1)
            return
        if isinstance(node, (nodes.block_quote, nodes.container, nodes.compound)) or (
            isinstance(node, nodes.Element) and node.tagname == "only"
        ):
            for child in node.children:  # Sphinx indents them; their blocks are the section's
                self.element(child, depth)
            return
        for out in self.render(node, top=True):
            self.add(out)

    def add(self, out: _Out) -> None:
        if not out.text.strip():
            return
        self.blocks.append(Block(out.kind, out.text, out.items))
        self.body.append(out.text)
        self.prose += max(0, _word_chars(out.text if out.kind == "code" else out.plain) - out.unsaid)
        if out.plain.strip():
            self.plain.append(out.plain)
            if not self.first_text:
                self.first_text = " ".join(out.plain.split())

    # body elements ------------------------------------------------------------
    def render(self, node: nodes.Node, top: bool = False) -> list[_Out]:
        if isinstance(node, (*_SKIP_NODES, nodes.problematic)):
            return []
        if isinstance(node, _TocTree):
            self.toctree(node)
            return []
        if isinstance(node, nodes.paragraph):
            text = _line_start(" ".join(self.inline(node).split()))
            if top and not self.first_paragraph and text:
                self.first_paragraph = text
            return [_Out("para", text, _plain_of(node))]
        if isinstance(node, (nodes.literal_block, nodes.doctest_block, nodes.math_block)):
            return [_Out("code", _fence(node.astext(), self.language(node)), "")]
        if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            return [self.list(node)]
        if isinstance(node, (nodes.definition_list, nodes.field_list, nodes.option_list)):
            return [self.term_list(node)]
        if isinstance(node, (nodes.Admonition, _Callout)):
            return [self.admonition(node)]
        if isinstance(node, nodes.table):
            title = node[0] if node.children and isinstance(node[0], nodes.title) else None
            caption = [_Out("para", f"**{self.inline(title)}**", _plain_of(title))] if title else []
            return [*caption, self.table(node)]
        if isinstance(node, (nodes.rubric, _Signature)):
            inner = self.inline(node)
            text = _code_span(node.astext()) if isinstance(node, _Signature) else f"**{inner}**"
            return [_Out("para", text, _plain_of(node) if isinstance(node, nodes.rubric) else "")]
        if isinstance(node, nodes.line_block):
            lines = [" ".join(self.inline(line).split()) for line in node.findall(nodes.line)]
            return [_Out("para", "  \n".join(_line_start(x) for x in lines if x), _plain_of(node))]
        if isinstance(node, (nodes.footnote, nodes.citation)):
            label = node[0].astext() if node.children and isinstance(node[0], nodes.label) else ""
            inner = self.join(self.children(node, skip=nodes.label))
            return [_Out("para", f"[{label}] {inner}".strip(), _plain_of(node))]
        if isinstance(node, (nodes.topic, nodes.sidebar)):
            return self.children(node)
        if isinstance(node, nodes.attribution):
            return [_Out("para", "— " + self.inline(node), _plain_of(node))]
        if isinstance(node, nodes.TextElement):  # title, caption, and any other text
            text = _line_start(" ".join(self.inline(node).split()))
            return [_Out("para", text, _plain_of(node))]
        if isinstance(node, nodes.Element):
            return self.children(node)
        return []

    def children(self, node: nodes.Element, skip: type[nodes.Node] | None = None) -> list[_Out]:
        return [out for child in node.children if skip is None or not isinstance(child, skip)
                for out in self.render(child)]

    @staticmethod
    def join(outs: Sequence[_Out]) -> str:
        return "\n\n".join(out.text for out in outs if out.text.strip())

    @staticmethod
    def language(node: nodes.Element) -> str:
        language = str(node.get("language", "") or "")
        if not language:
            classes = [str(c) for c in node["classes"] if c not in ("code", "doctest")]
            language = classes[0] if classes else ""
        if isinstance(node, nodes.doctest_block):
            language = language or "pycon"
        elif isinstance(node, nodes.math_block):
            language = "math"
        return re.sub(r"[^\w+#.-]", "", language)

    def list(self, node: nodes.Element) -> _Out:
        items: list[str] = []
        unsaid = 0
        number = int(node.get("start", 1) or 1)
        for item in node.children:
            if not isinstance(item, nodes.list_item):
                continue
            marker = f"{number}. " if isinstance(node, nodes.enumerated_list) else "- "
            number += 1
            inner = self.join(self.children(item)) or ""
            items.append(marker + _indent(inner, " " * len(marker)).lstrip())
            if _link_only(item):
                self.structure += 1
                unsaid += _word_chars(_plain_of(item))
        return _Out("list", "\n".join(items), _plain_of(node), tuple(items), unsaid)

    def term_list(self, node: nodes.Element) -> _Out:
        items: list[str] = []
        for item in node.children:
            if not isinstance(item, nodes.Element) or not item.children:
                continue
            head, *rest = item.children
            if isinstance(head, nodes.option_group):
                term = _code_span(head.astext())
            else:
                term = " ".join(self.inline(head).split())
                for extra in rest[:-1]:  # classifiers, further terms
                    if isinstance(extra, (nodes.classifier, nodes.term)):
                        term += " : " + " ".join(self.inline(extra).split())
            last = rest[-1] if rest else None
            body = self.join(self.children(last)) if isinstance(last, nodes.Element) else ""
            text = f"**{term}**" + (f": {body}" if body else "")
            items.append("- " + _indent(text, "  ").lstrip())
        return _Out("list", "\n".join(items), _plain_of(node), tuple(items))

    def admonition(self, node: nodes.Element) -> _Out:
        outs = self.children(node, skip=nodes.title)
        if isinstance(node, _Callout):
            label = str(node["label"])
        elif node.children and isinstance(node[0], nodes.title):
            label = " ".join(self.inline(node[0]).split())
        else:
            label = _ADMONITION_LABELS.get(node.tagname, node.tagname.capitalize())
        if outs and outs[0].kind == "para":
            text = f"{label}: {outs[0].text}\n\n{self.join(outs[1:])}".strip()
        else:
            text = f"{label}{':' if outs else '.'}\n\n{self.join(outs)}".strip()
        plain = "\n".join([" ".join(label.split()), *(o.plain for o in outs)])
        if isinstance(node, _Callout):  # Sphinx shows version notes as a paragraph
            return _Out("para", text, plain)
        return _Out("para", _indent(text, "> ").replace("\n\n", "\n>\n"), plain)

    def table(self, node: nodes.table) -> _Out:
        rows: list[list[str]] = []
        header = 0
        for group in node.findall(nodes.tgroup):
            for part in group.children:
                if isinstance(part, (nodes.thead, nodes.tbody)):
                    for row in part.children:
                        cells = [
                            " ".join(self.join(self.children(entry)).split())
                            for entry in row.children if isinstance(entry, nodes.Element)
                        ]
                        rows.append(cells)
                        if isinstance(part, nodes.thead):
                            header = len(rows)
            break
        if not rows:
            return _Out("table", "", "")
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        head = rows[max(header, 1) - 1] if header <= 1 else rows[header - 1]
        body = rows[header:] if header else rows[1:]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * width]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return _Out("table", "\n".join(lines), _plain_of(node))

    def toctree(self, node: _TocTree) -> None:
        for line, entry in node["entries"]:
            target = _split_title(entry)[1]
            if target == "self" or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//", target):
                continue
            if node["glob"] and any(ch in target for ch in "*?["):
                continue
            target = target.removesuffix(".rst")
            docname = _docname_join(self.docname, target)
            self.links.append(Link(_href(self.docname, docname), "markdown", line))

    # inline -------------------------------------------------------------------
    def inline(self, node: nodes.Node) -> str:
        if isinstance(node, nodes.Text):
            return _escape(node.astext())
        if isinstance(node, nodes.problematic):
            return _escape(_problematic_text(node.astext()))
        if isinstance(node, _SKIP_NODES):
            return ""
        if isinstance(node, nodes.literal):
            return _code_span(node.astext())
        assert isinstance(node, nodes.Element)
        if isinstance(node, _XRef):
            return self.xref(node)
        inner = "".join(self.inline(child) for child in node.children)
        if isinstance(node, (nodes.emphasis, nodes.title_reference)):
            return f"*{inner.strip()}*" if inner.strip() else ""
        if isinstance(node, nodes.strong):
            return f"**{inner.strip()}**" if inner.strip() else ""
        if isinstance(node, nodes.reference):
            return self.reference(node, inner)
        return inner

    def reference(self, node: nodes.reference, inner: str) -> str:
        uri = str(node.get("refuri", ""))
        if not inner.strip():
            return ""  # a linked image (badges): nothing to read
        if uri:
            if node.astext() == uri:
                return f"<{uri}>" if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", uri) else inner
            return f"[{inner}]({uri.replace(' ', '%20').replace(')', '%29')})"
        refid = str(node.get("refid", ""))
        if refid:  # `Section title`_ on this page
            self.links.append(Link(f"#{refid}", "markdown", _line(node)))
            return f"[{inner}](#{refid})"
        return inner

    def xref(self, node: _XRef) -> str:
        kind, target = str(node["kind"]), str(node["target"])
        title = node.astext() if node["explicit"] else None
        if kind == "ref":
            target = " ".join(target.lower().split())
        self.xrefs.append(_XRefUse(kind, target, title, _line(node)))
        return f"\ue000{len(self.xrefs) - 1}\ue001"


def _line(node: nodes.Node) -> int:
    current: nodes.Node | None = node
    while current is not None:
        line = getattr(current, "line", None)
        if isinstance(line, int) and line > 0:
            return line
        current = current.parent
    return 1


# --- public API -----------------------------------------------------------------


CACHED_PAGE_CHARS = 256 * 1024
"""Drafts of pages up to this size are kept (512 of them) between the two steps; a larger
page is parsed again in the second step rather than held in memory."""


RST_PAGE_SECONDS = 10.0
"""The wall-clock budget of one page's docutils parse. docutils' own parser grows faster than
the page on some inputs (40 KB of unclosed `` `a < `` took 65 s); a page over budget is refused
with that reason instead of stalling the seed (docs/operations/seeding-safety.md)."""


def read_rst(text: str, docname: str) -> RstDraft:
    """Parse one page (LF line ends expected); cross-references still open. Raises RstError."""
    return _read_cached(text, docname) if len(text) <= CACHED_PAGE_CHARS else _read_bounded(text, docname)


class _Reader:
    """One worker process that parses pages, replaced when a page runs over its budget (a
    thread cannot be stopped; a process can). Spawned, not forked: the service has threads."""

    def __init__(self) -> None:
        self._pool: multiprocessing.pool.Pool | None = None

    def read(self, text: str, docname: str, budget: float) -> RstDraft:
        if self._pool is None:
            self._pool = multiprocessing.get_context("spawn").Pool(1)
            atexit.register(self._pool.terminate)
        pending = self._pool.apply_async(_read, (text, docname))
        try:
            draft: RstDraft = pending.get(timeout=budget)
        except multiprocessing.TimeoutError:
            self._pool.terminate()
            self._pool = None
            raise RstError(f"reStructuredText page not read within {budget:g} s (docutils' parse "
                           "grows faster than the page on some inputs)") from None
        return draft


_READER = _Reader()


def _read_bounded(text: str, docname: str) -> RstDraft:
    return _READER.read(text, docname, RST_PAGE_SECONDS)


def _brings_text(directive: str) -> bool:
    return directive == "include" or directive.startswith("auto")


def _read(text: str, docname: str) -> RstDraft:
    document = _doctree(_PRIVATE.sub("", text))
    renderer = _Renderer(docname)
    try:
        renderer.document(document)
    except RecursionError:
        raise RstError("reStructuredText nested too deeply to read") from None
    page = ParsedPage(
        meta={},
        properties={},
        body="\n\n".join(renderer.body),
        h1=renderer.h1,
        sections=tuple(renderer.sections),
        headings=tuple(renderer.headings),
        anchors=_anchors(document),
        plain="\n".join(renderer.plain),
        first_paragraph=renderer.first_paragraph,
        first_text=renderer.first_text,
        links=tuple(renderer.links),
        stub=renderer.prose < STUB_PROSE_CHARS and (renderer.structure > 0 or renderer.prose == 0),
        # Text from another file (`include`, autodoc) brings its own anchors.
        generated=any(_brings_text(str(n.get("skipped", ""))) for n in document.findall(nodes.comment)),
    )
    return RstDraft(docname, page, tuple(renderer.xrefs), _labels(document, docname), renderer.h1)


_read_cached = lru_cache(maxsize=512)(_read_bounded)


def sphinx_project(drafts: Iterable[RstDraft]) -> SphinxProject:
    """Labels and page titles of a whole corpus (the first page to define a label wins)."""
    labels: dict[str, LabelTarget] = {}
    titles: dict[str, str] = {}
    for draft in drafts:
        for name, target in draft.labels.items():
            labels.setdefault(name, target)
        titles[draft.docname] = draft.title or posixpath.basename(draft.docname)
    return SphinxProject(labels, titles)


def parse_rst_page(text: str, *, docname: str = "index",
                   project: SphinxProject | None = None) -> ParsedPage:
    """One page with its cross-references resolved against `project` (else its own labels)."""
    draft = read_rst(text, docname)
    project = project if project is not None else sphinx_project([draft])
    filled, links = _resolve(draft, project)

    def fill(value: str) -> str:
        return _PLACEHOLDER.sub(lambda m: filled[int(m.group(1))], value) if filled else value

    page = draft.page
    sections = tuple(
        Section(
            tuple(None if p is None else fill(p) for p in s.path), s.anchor,
            tuple(Block(b.kind, fill(b.text), tuple(map(fill, b.items))) for b in s.blocks),
        )
        for s in page.sections
    )
    return remember(replace(
        page, body=fill(page.body), h1=fill(page.h1) if page.h1 else page.h1, sections=sections,
        headings=tuple(map(fill, page.headings)), plain=_PLACEHOLDER.sub(
            lambda m: _plain_words(filled[int(m.group(1))]), page.plain),
        first_paragraph=fill(page.first_paragraph),
        first_text=_PLACEHOLDER.sub(lambda m: _plain_words(filled[int(m.group(1))]), page.first_text),
        links=tuple(sorted([*page.links, *links], key=lambda link: link.line)),
    ))


def _plain_words(markdown_link: str) -> str:
    """`[Title](x.rst#a)` → `Title` (plain text keeps link text only)."""
    match = re.match(r"^\[(.*)\]\([^)]*\)$", markdown_link, re.DOTALL)
    text = match.group(1) if match else markdown_link
    return re.sub(r"\\(.)", r"\1", text)


def _resolve(draft: RstDraft, project: SphinxProject) -> tuple[list[str], list[Link]]:
    """Each placeholder's Markdown and the links it makes (see module doc)."""
    filled: list[str] = []
    links: list[Link] = []
    for use in draft.xrefs:
        if use.kind == "ref":
            label = project.labels.get(use.target)
            if label is None:
                intersphinx = _INTERSPHINX.match(use.target) is not None
                links.append(Link(use.target, "external" if intersphinx else "ref", use.line))
                filled.append(_escape(use.title or _shown_target(use.kind, use.target)))
                continue
            href = _href(draft.docname, label.docname, label.anchor)
            text = use.title or label.title or use.target
        else:
            docname = _docname_join(draft.docname, use.target.removesuffix(".rst"))
            if docname not in project.titles and _INTERSPHINX.match(use.target):
                links.append(Link(use.target, "external", use.line))
                filled.append(_escape(use.title or _shown_target(use.kind, use.target)))
                continue
            href = _href(draft.docname, docname)
            text = use.title or project.titles.get(docname) or use.target
        links.append(Link(href, "markdown", use.line))
        filled.append(f"[{_escape(text)}]({href})")
    return filled, links


_INTERSPHINX = re.compile(r"^[\w.-]+:(?!:)\S")
"""`python:library/pdb`, `kombu:connection-urls`: a target in another project's documentation,
reached through `intersphinx_mapping` (read only when no page of the corpus has that name)."""


def _shown_target(kind: str, target: str) -> str:
    """What stands for a cross-reference without a title whose target is not in the corpus:
    the name without its project (`python:library/pdb` → `pdb`; the real title is elsewhere)."""
    name = target.split(":", 1)[1] if _INTERSPHINX.match(target) else target
    return posixpath.basename(name.removesuffix(".rst")) if kind == "doc" else name


def read_project(pages: Iterable[tuple[PurePosixPath, str]]) -> SphinxProject:
    """The project of a corpus from (relative path, text) pairs; unreadable pages are left out
    (the page's own parse reports them)."""
    drafts: list[RstDraft] = []
    for relative, text in pages:
        try:
            drafts.append(read_rst(text, docname_of(relative)))
        except RstError:
            continue
    return sphinx_project(drafts)



def project_of_files(root: Path, files: Iterable[Path], decode: Callable[[Path], str]) -> SphinxProject:
    """The project of the `.rst` pages among `files` (read with `decode`); a page that cannot be
    read is left out here and reported by its own parse."""
    pages: list[tuple[PurePosixPath, str]] = []
    for path in files:
        if path.suffix == ".rst":
            try:
                pages.append((PurePosixPath(path.relative_to(root).as_posix()), decode(path)))
            except (ValueError, OSError):
                continue
    return read_project(pages)
