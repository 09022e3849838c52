"""What a name in code looks like, and the keys it is searched by (issue 42).

One grammar for both sides: the pages' identifiers (service/ingest/identifiers.py) and the
identifiers a query holds (service/normalize/query.py) are read by these functions, so that
`ProxyFix`, `proxy_fix` and `--proxy-fix` meet in the same keys.

- a **name**: word segments joined by `.`, `::`, `_` or `-`, optionally after a sigil (`--`,
  `$`, `@`, a leading `.` of a dotfile, a leading `:` of an editor command): `after_this_request`,
  `pymdownx.snippets`, `ProxyFix`, `--print-width`, `$patch`, `Trust::Reduced`, `.prettierignore`,
  `:workspace-trust`;
- **strong** names are never ordinary prose: a sigil, `_` or `::` inside, a dotted path whose
  segments are not single letters (`e.g` is not one), or a case change inside a word
  (camelCase, PascalCase: `storeToRefs`, `HTTPException`). A kebab-case word (`lint-staged`)
  is a name only where code is written (English has `built-in`);
- its **keys**: the whole form lower-cased (`after_this_request`), the compact form (its
  letters and digits only: `afterthisrequest`, what `ProxyFix` and `proxyfix` share), and its
  parts (`after`, `this`, `request`; `proxy`, `fix`), which are ordinary words.
"""

from __future__ import annotations

import re

NAME = re.compile(
    r"(?<![\w$@.:\\/)\]-])"  # not the middle of a longer token, a path, a URL or a call chain
    r"(?:--|\$|@|\.(?=[A-Za-z])|(?P<colon>:)(?=[A-Za-z]))?"  # sigils: --flag, $name, @decorator, .dotfile, :command
    r"[A-Za-z_][\w$]*"
    r"(?:(?:\.|::|-)[A-Za-z_$][\w$]*)*"
    # after a `:`, a namespaced keyword (EDN, Clojure): `:editor/extra-codemirror-options`
    r"(?(colon)(?:/[A-Za-z_$][\w$]*(?:(?:\.|-)[A-Za-z_$][\w$]*)*)?)"
    r"(?![\w$]|[.:-][A-Za-z_$])",
)
"""A name as written; a trailing `.` (a sentence's end) or `()` is not part of it."""

SEGMENTS = re.compile(r"[A-Za-z0-9]+")
"""The runs of letters and digits a name is written with (`forwardedHeaders`, `trustedIPs`)."""
# An acronym's plural is one part (`trustedIPs` → trusted, ips; `URLs`), not `I` and `Ps`.
_CAMEL_PARTS = re.compile(r"[A-Z]+s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
_CASE_CHANGE = re.compile(r"[a-z][0-9]*[A-Z]|[A-Z]{2}[a-z]{2}")
"""camelCase, `Jinja2Templates`, `HTTPException`; not `URLs`, `10GB`."""
_INNER_UNDERSCORE = re.compile(r"[A-Za-z0-9]_+[A-Za-z0-9]")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)+")
_SIGIL = re.compile(r"^(?:--|\$|@|\.|:)")
MIN_LENGTH = 3
"""Letters and digits a name needs (`x`, `id` are not searched as names)."""


def skeleton(name: str) -> str:
    """What a name is made of besides its letters and digits (`session_cookie_samesite` → `__`,
    `--print-width` → `---`, `storeToRefs` → ``): two spellings of one name share it."""
    return re.sub(r"[A-Za-z0-9]+", "", name)


def bare(name: str) -> str:
    """The name without its sigil (`--print-width` → `print-width`, `$patch` → `patch`)."""
    return _SIGIL.sub("", name)


def is_strong(name: str) -> bool:
    """A name prose never writes (module doc): a sigil, an inner `_` or `::`, a dotted path,
    or a case change inside a word."""
    letters = sum(ch.isalnum() for ch in name)
    if letters < MIN_LENGTH or not any(ch.isalpha() for ch in name):
        return False
    if _SIGIL.match(name) and len(bare(name)) >= 2 and bare(name)[0].isalpha():
        return True
    if "::" in name or _INNER_UNDERSCORE.search(name) or _CASE_CHANGE.search(name):
        return True
    if _DOTTED.fullmatch(name.replace("-", "_")):
        return any(len(part) > 1 for part in name.split(".")) and not all(len(p) == 1 for p in name.split("."))
    return False


def is_kebab(name: str) -> bool:
    """Lower-case words joined by `-` (`lint-staged`, `use-grammars`): a name in code only."""
    parts = bare(name).split("-")
    return len(parts) >= 2 and all(p[:1].isalpha() for p in parts) and sum(map(len, parts)) >= MIN_LENGTH


def names_in(text: str) -> list[str]:
    """Every name-shaped token of `text`, in order (strong or not: the caller's context decides)."""
    return [m.group(0) for m in NAME.finditer(text)]


_PLURAL_MARK = re.compile(r"\((?:e?s)\)", re.IGNORECASE)
"""`note(s)`, `match(es)`: prose's optional plural, the one bracket prose puts against a word."""


def called_names(text: str) -> list[str]:
    """The names `text` writes as a call (`alert(1)`, `setup()`): code by their shape, whatever
    their case, since prose puts a space before a bracket (but for a plural mark: `note(s)`)."""
    return [m.group(0) for m in NAME.finditer(text)
            if text.startswith("(", m.end()) and not _PLURAL_MARK.match(text, m.end())]


def whole_key(name: str) -> str:
    """The name as one lower-case key, sigils kept (`--print-width`, `$patch`, `proxyfix`)."""
    return name.lower()


def compact_key(name: str) -> str:
    """Its letters and digits only, lower-cased: `ProxyFix`, `proxy_fix`, `--proxy-fix` → `proxyfix`."""
    return "".join(SEGMENTS.findall(name)).lower()


def parts(name: str) -> list[str]:
    """The words a name is made of, lower-cased, in order: snake, dotted, kebab and camel
    splits (`HTTPException` → http, exception; `Jinja2Templates` → jinja2, templates)."""
    out: list[str] = []
    for segment in SEGMENTS.findall(name):
        out.extend(p.lower() for p in _CAMEL_PARTS.findall(segment))
    return out


def suffixes(name: str) -> list[str]:
    """The shorter names a dotted path answers to (`flask.views.MethodView` → `views.MethodView`,
    `MethodView`): an API is searched by its last names as often as by its whole path."""
    if name[:1] == "." or ("." not in name and "::" not in name):
        return []
    pieces = re.split(r"(\.|::)", name)
    return ["".join(pieces[i:]) for i in range(2, len(pieces), 2)]


def is_separated(key: str) -> bool:
    """A key with characters besides letters and digits: never an ordinary word's key."""
    return not key.isalnum()
