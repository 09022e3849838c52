"""Text a page includes from another file of the corpus, read in place.

Documentation generators let a page pull in a file: Sphinx's `.. include:: ../includes/installation.txt`,
MkDocs' snippets (`--8<-- "docs/.preview-features.md"`), VitePress' `<!--@include: ./part.md-->`.
The site shows the included text as part of the page, so the page is read with it: its words
are searched there and its labels (`.. _bundles:`) are the page's, which `:ref:` links reach.

A file is read in place only when the site could not show its text anywhere else:
- it lies inside SEEDS_DIR (a path that leaves it, `../../AUTHORS.rst`, is not followed: what is
  outside may be anything) and is a text file of documentation (`INCLUDABLE_SUFFIXES`; a snippet
  of SVG markup is a picture, not words);
- it is not a page of the corpus itself: that text has its own page already, and one section
  once (issue 42) means not a second copy inside another page;
- at most `MAX_DEPTH` files deep, never a file already being read (a cycle), and the page with
  all it includes stays within the per-page size limit.
Any other include stays as written, and the dialect readers skip it as before (its anchors are
unverifiable there, service/ingest/links.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

INCLUDABLE_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".rst", ".txt", ".inc"})
"""Files read in place: documentation text (Borg's `usage/create.rst.inc`, Celery's `.txt`)."""
RST_SUFFIXES = frozenset({".rst", ".txt", ".inc"})
"""Files whose includes are Sphinx's `.. include::` (a page, and the text files it includes)."""
MAX_DEPTH = 4
"""Files included from included files, at most."""

_RST = re.compile(r"^(?P<indent>[ \t]*)\.\.[ \t]+include::[ \t]+(?P<target>\S.*?)\s*$")
_RST_OPTION = re.compile(r"^(?P<indent>[ \t]+):(?P<name>[\w-]+):(?:[ \t]+(?P<value>.*?))?\s*$")
_SNIPPET = re.compile(r"^(?P<indent>[ \t]*)--8<--[ \t]+(?P<quote>[\"'])(?P<target>[^\"'\n]+)(?P=quote)\s*$")
_SNIPPET_LINES = re.compile(r"^(?P<path>.+?)(?::(?P<start>\d*)(?::(?P<end>\d*))?)?$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_VITEPRESS = re.compile(
    r"^(?P<indent>[ \t]*)<!--\s*@include:\s*(?P<target>[^\s{}#]+?)(?:\{(?P<start>\d*),(?P<end>\d*)\})?\s*-->\s*$"
)


@dataclass
class IncludeReader:
    """Reads a page's text with what it includes (module doc). `decode` reads one file of the
    corpus as text (or raises, for a file that is not: binary, too large); `pages` are the
    corpus's page files; `limit` bounds a page with its includes, in characters."""

    seeds_dir: Path
    pages: Collection[Path]
    decode: Callable[[Path], str]
    limit: int
    read_in: int = 0
    """Includes read in place so far."""
    left_out: dict[str, str] = field(default_factory=dict)
    """Each include left as written (its page and target) with the reason."""

    def __post_init__(self) -> None:
        self._root = _real(self.seeds_dir)
        self._pages = frozenset(_real(p) for p in self.pages)
        self._read_once: dict[Path, str] = {}

    def text(self, path: Path) -> str:
        """The page's text with each include it may read in place (module doc) put in. Read once
        a page: the Sphinx project (its labels) and the page's own parse ask for the same text."""
        if (known := self._read_once.get(path)) is not None:
            return known
        text = self.decode(path)  # first: a page that is a bad file (a symlink loop) raises its reason
        self._read_once[path] = self._expand(text, _real(path), (_real(path),), len(text))
        return self._read_once[path]

    def _expand(self, text: str, path: Path, reading: tuple[Path, ...], size: int) -> str:
        if "include" not in text and "--8<--" not in text:
            return text
        lines = text.split("\n")
        out: list[str] = []
        at = 0
        fence: str | None = None  # a Markdown code block shows an include's syntax, it includes nothing
        markdown = path.suffix.lower() not in RST_SUFFIXES
        while at < len(lines):
            line = lines[at]
            at += 1
            if markdown and (opened := _FENCE.match(line)) is not None:
                marker = opened.group(1)
                fence = marker if fence is None else (None if marker.startswith(fence) else fence)
            found = None if fence is not None else self._directive(line, lines, at, path)
            if found is None:
                out.append(line)
                continue
            target, indent, span, options, consumed = found
            included = self._read(target, path, reading, size)
            if included is None:
                out.append(line)
                continue
            at += consumed
            body = _lines_of(included, span, options)
            size += sum(len(b) + 1 for b in body)
            out.extend(_placed(body, indent, literal="literal" in options or "code" in options))
        return "\n".join(out)

    def _directive(
        self, line: str, lines: list[str], at: int, path: Path,
    ) -> tuple[Path, str, tuple[int | None, int | None], dict[str, str], int] | None:
        """An include on `line`: its target file, indentation, line span, options (Sphinx's) and
        how many option lines follow it; None when the line is none. reStructuredText's form is
        read in its files (and the `.txt`/`.inc` files they include), the Markdown generators'
        forms in Markdown."""
        if path.suffix.lower() in RST_SUFFIXES:
            rst = _RST.match(line)
            if rst is None or (raw := rst.group("target")).startswith("<"):  # `<isonum.txt>`: docutils' own
                return None
            options: dict[str, str] = {}
            consumed = 0
            while at + consumed < len(lines) and (option := _RST_OPTION.match(lines[at + consumed])) is not None:
                options[option.group("name")] = option.group("value") or ""
                consumed += 1
            base = self._root if raw.startswith("/") else path.parent
            span = (_number(options.get("start-line")), _number(options.get("end-line")))
            return base / raw.lstrip("/"), rst.group("indent"), span, options, consumed
        if (snippet := _SNIPPET.match(line)) is not None:
            parsed = _SNIPPET_LINES.match(snippet.group("target").strip())
            assert parsed is not None  # the pattern matches any non-empty path
            return (self._snippet_file(parsed.group("path"), path), snippet.group("indent"),
                    _one_based(parsed.group("start"), parsed.group("end")), {}, 0)
        if (vite := _VITEPRESS.match(line)) is not None:
            raw = vite.group("target")
            base = self._root if raw.startswith("@/") else path.parent
            return (base / raw.removeprefix("@/"), vite.group("indent"),
                    _one_based(vite.group("start"), vite.group("end")), {}, 0)
        return None

    def _snippet_file(self, written: str, page: Path) -> Path:
        """MkDocs' snippets are found from the folder `mkdocs.yml` is in, which is SEEDS_DIR or a
        folder above it (`docs/`, `content/`): the page's folder, SEEDS_DIR, then the path without
        its first folders, the first that names a file."""
        relative = PurePosixPath(written)
        candidates = [page.parent / written, self._root / written]
        candidates += [self._root.joinpath(*relative.parts[i:]) for i in range(1, len(relative.parts))]
        return next((c for c in candidates if c.is_file()), candidates[0])

    def _read(self, target: Path, page: Path, reading: tuple[Path, ...], size: int) -> str | None:
        name = f"{_shown(page, self._root)} → {_shown(target, self._root)}"
        resolved = _real(target)
        reason = None
        if not resolved.is_relative_to(self._root):
            reason = "outside SEEDS_DIR (not followed)"
        elif not resolved.is_file():
            reason = "no such file"
        elif resolved.suffix.lower() not in INCLUDABLE_SUFFIXES:
            reason = f"not a text file of documentation ({resolved.suffix or 'no suffix'})"
        elif resolved in self._pages:
            reason = "a page of the corpus itself (its text is on that page)"
        elif resolved in reading or len(reading) > MAX_DEPTH:
            reason = "included from itself, or too deep"
        if reason is None:
            try:
                text = self.decode(resolved)
            except (ValueError, OSError) as err:
                reason = str(err)
            else:
                if size + len(text) > self.limit:
                    reason = "the page would grow past the per-page size limit"
                else:
                    self.read_in += 1
                    return self._expand(text, resolved, (*reading, resolved), size + len(text))
        self.left_out[name] = reason
        return None


def _real(path: Path) -> Path:
    """The path with its symlinks followed, as far as they go (a loop or a dangling link is
    `decode`'s to report, not a reason to stop here)."""
    return Path(os.path.realpath(path))


def _shown(path: Path, root: Path) -> str:
    """A path as the seed log names it: from SEEDS_DIR (`../CONTRIBUTING.rst` for one above it)."""
    return Path(os.path.normpath(os.path.relpath(path, root))).as_posix()


def _number(value: str | None) -> int | None:
    return int(value) if value else None


def _one_based(start: str | None, end: str | None) -> tuple[int | None, int | None]:
    """Lines `start` to `end`, counted from 1 and both included (snippets' `file.md:3:10`,
    VitePress' `{3,10}`), as a slice."""
    first = _number(start)
    return (first - 1 if first else None, _number(end))


def _lines_of(text: str, span: tuple[int | None, int | None], options: dict[str, str]) -> list[str]:
    """The included lines: within `span` (0-based start, end exclusive), then after Sphinx's
    `:start-after:` text and before its `:end-before:` text."""
    start, end = span
    text = "\n".join(text.split("\n")[start:end])
    if after := options.get("start-after"):
        head, found, rest = text.partition(after)
        text = rest if found else head
    if before := options.get("end-before"):
        text = text.partition(before)[0]
    return text.strip("\n").split("\n")


def _placed(body: list[str], indent: str, literal: bool) -> list[str]:
    """The included lines at the directive's indentation (inside a list or directive they are
    its content, as the generator reads them); a literal include as a literal block."""
    if literal:
        return [f"{indent}::", "", *(f"{indent}    {line}" if line else "" for line in body), ""]
    return ["", *(f"{indent}{line}" if line else "" for line in body), ""]
