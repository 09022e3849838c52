"""The identifiers a page (or one of its sections) shows, and which of them it defines (issue 42).

Developers search documentation by the names in their code (`after_this_request`, `ProxyFix`,
`pymdownx.snippets`, `--print-width`), so those names are a field of the keyword index of their
own (service/scoring/lexical_units.py). They are read from a unit's Markdown, the form every
dialect's page is stored in (reStructuredText is written out as Markdown by rst.py: roles as
inline code, object directives as a line of code), with the grammar of service/domain/identifiers.py:

- **mentions**: in fenced code and inline code, every strong or kebab-case name; in prose, every
  strong name (prose writes `built-in`, never `after_this_request`) but a product's
  (`TypeScript`, `GitHub`); an inline code span that is one name (`Session`, `nav`,
  `GOMAXPROCS`) names it whatever its shape.
- **definitions** (the page explains the name, not only shows it): a heading naming it (a
  heading that is one name: MkDocs' `### site_name`; or the code in a heading),
  a line that is one code span (an API entry: Sphinx's signatures, `.. autoclass::`), a
  mkdocstrings `::: module.Name` line, a list or definition term (`- `--cache`: …`,
  `- **name**: …`), a table cell that is one name (a configuration table's key, an option's
  CLI and API names); but not a name the unit links to another page by (its link text is the
  name: Vitest's generated CLI page says `Config: [coverage.thresholds.autoUpdate](/config/coverage#…)`
  under a heading naming it), unless other pages' links point at this unit by it too.

Not names: literals (`true`, `null`), numbers, URLs and link targets. At most `MAX_PER_UNIT`
names a unit (definitions first, then the most shown): an API page of thousands of names
stays bounded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from service.domain.identifiers import MIN_LENGTH, NAME, bare, is_kebab, is_strong, names_in
from service.ingest.scan import code_spans, fenced_lines

MAX_PER_UNIT = 256
"""Distinct names kept per unit (page or chunk)."""

LITERALS = frozenset({"true", "false", "null", "none", "nil", "undefined", "yes", "no", "on", "off", "nan"})

SIGNATURE_KEYWORDS = frozenset({
    "class", "def", "async", "function", "func", "fn", "method", "property", "exception", "attribute",
    "data", "const", "let", "var", "type", "interface", "enum", "struct", "pub", "static", "export",
    "classmethod", "staticmethod", "decorator", "await", "new",
})
"""Words that may come before the defined name in a signature (`class flask.views.MethodView`)."""


@dataclass(frozen=True, slots=True)
class Identifier:
    name: str
    """As written (`flask.views.MethodView`, `--print-width`, `$patch`), without a trailing `()`."""
    defined: bool
    """The unit defines or explains it (module doc), not only shows it."""
    count: int
    """Times the unit shows it."""


_HEADING = re.compile(r"^\s{0,3}(?:>\s*)*(?:[-*+]\s+)?#{1,6}\s+(.*?)\s*#*\s*$")
_ATTR_LIST = re.compile(r"\s*\{[#.:][^{}]*\}\s*$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?[\s:|-]*-[\s:|-]*\|?\s*$")
_MKDOCSTRINGS = re.compile(r"^\s*:::\s+([A-Za-z_][\w.]*)\s*$")
_TERM = re.compile(
    r"^\s*(?:>\s*)*(?:[-*+]\s+|\d{1,9}[.)]\s+)?(?:\*\*)?(`+)(?P<code>.+?)\1(?:\*\*)?\s*(?:[:—–]|\s-\s)"
)
_BOLD_TERM = re.compile(r"^\s*(?:[-*+]\s+)(?:\*\*)(?P<term>[^*`]+)\*\*\s*:")
LINK_TARGET = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")
"""A Markdown link's address, `](../user/quickstart.rst#custom-headers "Title")`: where the link
goes, not what its page says (no names here, and no words of the page: scoring.lexical_units)."""
MARKDOWN_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]+)\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
"""An inline Markdown link in a line of a page's Markdown (not an image): its text and target."""
_REFERENCE_DEFINITION = re.compile(r"^\s*\[[^\]]+\]:\s*\S+")
_URL = re.compile(r"<?(?:https?|ftp|file|mailto):[^\s>)]*>?")
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_ESCAPE = re.compile(r"\\([_*\[\]<>|`#.-])")
_LIST_MARKER = re.compile(r"^\s*(?:>\s*)*(?:[-*+]\s+|\d{1,9}[.)]\s+)?")
_CALL = re.compile(r"\s*(?:\(.*\))?\s*$")


class _Collector:
    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.defined: set[str] = set()
        self.order: dict[str, int] = {}

    def add(self, name: str, defined: bool = False) -> None:
        name = name.rstrip(".:-")
        if sum(ch.isalnum() for ch in bare(name)) < MIN_LENGTH or name.lower() in LITERALS:
            return
        self.count[name] = self.count.get(name, 0) + 1
        self.order.setdefault(name, len(self.order))
        if defined:
            self.defined.add(name)

    def define(self, name: str) -> None:
        """Mark a name the unit explains, counting no showing of it (a link elsewhere names it)."""
        name = name.rstrip(".:-")
        if name in self.count:
            self.defined.add(name)
        else:
            self.add(name, defined=True)

    def result(self) -> tuple[Identifier, ...]:
        ranked = sorted(self.count, key=lambda n: (n not in self.defined, -self.count[n], self.order[n]))
        return tuple(Identifier(n, n in self.defined, self.count[n]) for n in ranked[:MAX_PER_UNIT])


def identifiers_of(markdown: str, headings: Iterable[str] = (), linked: Iterable[str] = ()) -> tuple[Identifier, ...]:
    """The names a unit shows (module doc). `headings`: headings the unit is under whose lines
    are not in its text (a chunk's header path, a page's title); `linked`: names other pages'
    links point at the unit by (`Chunk.linked_names`), which it defines."""
    found = _Collector()
    pointed = tuple(linked)
    for name in pointed:
        found.define(name)
    for heading in headings:
        _heading(heading, found, code=False)
    deferred: set[str] = set()
    for line, kind in fenced_lines(markdown):
        if kind == "code":
            _code(line, found)
        elif kind == "text":
            _line(line, found)
            for match in MARKDOWN_LINK.finditer(line):
                sent = linked_name(match.group("text"))
                if sent is not None and not match.group("target").startswith("#"):
                    deferred.add(sent.rstrip(".:-"))
    # A unit that sends the reader elsewhere for a name (its link text is the name) does not define
    # it, even under a heading naming it: a generated CLI page's `Config: [name](/config/…)`.
    found.defined -= deferred - set(pointed)
    return found.result()


def _code(text: str, found: _Collector) -> None:
    for name in names_in(text):
        if is_strong(name) or is_kebab(name):
            found.add(name)


def _line(line: str, found: _Collector) -> None:
    if _REFERENCE_DEFINITION.match(line):
        return
    heading = _HEADING.match(line)
    if heading is not None:
        _heading(heading.group(1), found, code=True)
        return
    if (doc := _MKDOCSTRINGS.match(line)) is not None:
        found.add(doc.group(1), defined=True)
        return
    if _TABLE_ROW.match(line):
        if not _TABLE_RULE.match(line):
            for cell in _cells(line):
                _cell(cell, found)
        return
    term = _TERM.match(line)
    if term is not None:
        _defines(term.group("code"), found)
    elif (bold := _BOLD_TERM.match(line)) is not None:
        name = _single_name(bold.group("term"))
        if name is not None and (is_strong(name) or is_kebab(name)):
            found.add(name, defined=True)
    elif (signature := _one_code_span(line)) is not None:
        _defines(signature, found, signature=True)
        return
    _inline(line, found)


def _inline(text: str, found: _Collector) -> None:
    """Code spans and prose of one line of text (not a heading)."""
    prose: list[str] = []
    last = 0
    for start, end in code_spans(text):
        prose.append(text[last:start])
        _span(text[start:end].strip("`").strip(), found)
        last = end
    prose.append(text[last:])
    _prose(" ".join(prose), found)


def _span(code: str, found: _Collector) -> None:
    name = _single_name(code)
    if name is not None:
        found.add(name)
        return
    _code(code, found)


def _prose(text: str, found: _Collector, defined: bool = False) -> None:
    text = _HTML_TAG.sub(" ", _URL.sub(" ", LINK_TARGET.sub("] ", text)))
    for name in names_in(_ESCAPE.sub(r"\1", text)):
        if _named_in_prose(name):
            found.add(name, defined=defined)


def _named_in_prose(name: str) -> bool:
    """Strong, and not a product's name (`TypeScript`, `GitHub`: capitalised, one word), which
    prose writes without code marks while documentation marks its API's `TestClient`."""
    return is_strong(name) and not (name[:1].isupper() and name.isalnum())


def _heading(text: str, found: _Collector, code: bool) -> None:
    """A heading names what its section defines: itself when it is one name (MkDocs'
    `### site_name`; a capitalised word only in code), or the names in its code (`code`: the
    heading's backticks are still there). A name in a heading's prose ("Global config.edn")
    is shown there, not defined: the section is about something that uses it."""
    text = _ATTR_LIST.sub("", text).strip()
    whole = _single_name(text.strip("`[]").strip()) or _single_name(text.replace("`", "").strip("[]"))
    if whole is not None and (is_strong(whole) or is_kebab(whole) or whole[:1].islower() or "`" in text):
        found.add(whole, defined=True)
        return
    spans = list(code_spans(text)) if code else []
    for start, end in spans:
        for name in names_in(text[start:end].strip("`")):
            if is_strong(name) or is_kebab(name) or _single_name(text[start:end].strip("`[] ")) == name:
                found.add(name, defined=True)
    rest = text
    for start, end in reversed(spans):
        rest = rest[:start] + " " + rest[end:]
    _prose(rest, found)


def _cells(row: str) -> list[str]:
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def _cell(cell: str, found: _Collector) -> None:
    """A table cell that is one name (optionally with its value's shape: `trailingComma:
    <string>`, `--print-width <int>`) defines it; any other cell is text."""
    head = re.sub(r"^(?:\*\*)?`+|`+(?:\*\*)?$", "", cell.strip()).strip()
    lead = NAME.match(head)
    if lead is not None:
        rest = head[lead.end():].strip()
        name = lead.group(0)
        if (not rest or rest[:1] in "<:=(" or rest.startswith("\\<")) and (
            "`" in cell or is_strong(name) or is_kebab(name)
        ):
            found.add(name, defined=True)
            if not rest:
                return
    _inline(cell, found)


def _defines(code: str, found: _Collector, signature: bool = False) -> None:
    """A term or signature: its first name (after `class`, `def` …) is defined."""
    names = names_in(code)
    while names and names[0] in SIGNATURE_KEYWORDS and len(names) > 1:
        names = names[1:]
    if not names:
        return
    lead = names[0]
    after = code[code.find(lead) + len(lead):] if lead in code else ""
    defines = not signature or _single_name(code) is not None or is_strong(lead) or after.lstrip().startswith("(")
    found.add(lead, defined=defines)
    for name in names[1:]:
        if is_strong(name) or is_kebab(name):
            found.add(name)


def _single_name(text: str) -> str | None:
    """`text` when it is one name (a call's `()` or arguments allowed), else None."""
    text = _LIST_MARKER.sub("", text.strip()).strip("`* ")
    lead = NAME.match(text)
    if lead is None or _CALL.fullmatch(text[lead.end():]) is None:
        return None
    return lead.group(0)


def linked_name(text: str) -> str | None:
    """The name a link's text is, when it is one (`` `<Card>` ``, `store.$onAction`, `` `nav` ``):
    in code whatever its shape, else a strong name; else None (a link to a page by its words)."""
    text = text.strip()
    spans = list(code_spans(text))
    if len(spans) == 1 and spans[0] == (0, len(text)):
        code = text.strip("`").strip().strip("<>/ ")
        return _single_name(code)
    name = _single_name(text)
    return name if name is not None and is_strong(name) and _named_in_prose(name) else None


def _one_code_span(line: str) -> str | None:
    """The code of a line (or list item) that is one code span, else None."""
    stripped = _LIST_MARKER.sub("", line).strip()
    if not stripped.startswith("`") or not stripped.endswith("`"):
        return None
    spans = list(code_spans(stripped))
    return stripped.strip("`").strip() if len(spans) == 1 and spans[0] == (0, len(stripped)) else None


def names(identifiers: Sequence[Identifier]) -> list[str]:
    """The names alone, in order."""
    return [i.name for i in identifiers]
