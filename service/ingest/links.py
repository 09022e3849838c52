"""Link check at seed: internal links must reach a page (and heading) of the corpus.

Checked: Markdown links without a scheme (`[t](../x/y.md)`, `[t](y.md#a)`,
`[t](#a)`; links without an extension, with `.html` or a trailing slash
reach the page or folder index a site generator serves there; reStructuredText `:ref:` / `:doc:` / toctree entries, which
service/ingest/rst.py writes as such links to `.rst` pages), wikilinks (`[[Page]]`, `[[Page#Heading]]`, `[[Page|label]]`) and
outliner block references (`((uuid))`, against the corpus's `id::` blocks).
A wikilink names a page by its title, slug, file name or alias, compared as
slugs (`[[Whiteboard/Action Bar]]` → `whiteboard-action-bar`); a heading by
its GitHub anchor. Links to other files (images, PDFs) are not pages and are
not checked. Flag `seeding.broken_links`: `warn` logs and reports them,
`fail` fails the seed before any write.

Not broken, and counted apart (`LinkCheck`): links that leave the corpus on purpose
(**external**: an intersphinx `python:library/pdb` target, a `?q=` site-search link, a site
address whose first folder is no folder of the corpus and no base path its other links reach
pages through: `/blog/…` or `/enterprise/` beside `/docs/…` links, the generated `/commands/…`
of a site whose command pages are not in the docs folder),
links into a file `seeding.ignore` leaves out (**excluded**), a wikilink to a page nobody
wrote in a Logseq graph (**unwritten**: Logseq makes a page of every `[[name]]`, holding the
blocks that link to it; a corpus is taken for a Logseq graph when its pages carry `id::`
block ids), and an anchor missing from a page that its build partly writes (an include, a
directive, a shortcode: the built page may have it): **unverifiable**, reported once per
page and anchor however many links point there.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import parse_qs, unquote

from service.ingest.dialects import DIALECTS
from service.ingest.markdown import CorpusPage
from service.ingest.parse import (
    Link,
    anchor_slug,
    name_slug,
    property_values,
    wikilink_target,
)


@dataclass(frozen=True, slots=True)
class BrokenLink:
    path: Path
    line: int
    target: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: broken link {self.target!r}: {self.reason}"


@dataclass(frozen=True, slots=True)
class UnverifiableAnchor:
    """An anchor missing from a page its build partly writes: `links` links point at it."""

    slug: str
    anchor: str
    path: Path
    """Where the first link to it is."""
    line: int
    links: int

    def __str__(self) -> str:
        return (f"{self.path}:{self.line}: anchor {self.slug}#{self.anchor} ({self.links} link(s)) is not "
                f"verifiable: part of {self.slug} is written by its build (an include, a directive or a shortcode)")


@dataclass(frozen=True, slots=True)
class LinkCheck:
    """Every internal link of a corpus, judged (module doc)."""

    broken: tuple[BrokenLink, ...] = ()
    unverifiable: tuple[UnverifiableAnchor, ...] = ()
    external: int = 0
    """Links that leave the corpus on purpose: intersphinx targets, `?q=` site-search links,
    site addresses outside the corpus's folders and base paths."""
    excluded: int = 0
    """Links into files `seeding.ignore` leaves out."""
    unwritten: int = 0
    """Wikilinks of a Logseq graph to pages without a file (Logseq makes them)."""


Verdict = Literal["ok", "broken", "external", "excluded", "unwritten", "unverifiable"]


@dataclass(frozen=True, slots=True)
class _Judged:
    verdict: Verdict
    reason: str = ""
    target: CorpusPage | None = None
    """`ok` or `unverifiable`: the page reached, or whose anchor it is (None for an asset)."""
    anchor: str = ""


_OK = _Judged("ok")


def _names(entry: CorpusPage) -> set[str]:
    doc, path, page = entry.doc, entry.path, entry.page
    names = {doc.slug, name_slug(doc.title), name_slug(path.stem), doc.slug.rsplit("/", 1)[-1]}
    for key in ("alias", "aliases"):
        raw = page.meta.get(key)
        values = raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else []
        names.update(name_slug(str(v)) for v in values)
        if key in page.properties:
            names.update(name_slug(v) for v in property_values(page.properties[key]))
    return {n for n in names if n}


class CorpusLinks:
    """Where the corpus's internal links lead: its pages by name and by file. `excluded`: the
    files `seeding.ignore` left out (`markdown.ignored_files`)."""

    def __init__(self, corpus: Sequence[CorpusPage], seeds_dir: Path, excluded: Sequence[Path] = ()) -> None:
        self.root = seeds_dir.resolve()
        self.by_name: dict[str, CorpusPage] = {}
        self.by_file: dict[Path, CorpusPage] = {}
        self.by_slug: dict[str, CorpusPage] = {}
        for entry in corpus:
            self.by_file[entry.path.resolve()] = entry
            self.by_slug[entry.doc.slug] = entry
            doc_id = entry.page.meta.get("id")
            if isinstance(doc_id, str) and doc_id.strip("/"):  # Docusaurus: the id replaces the file's name
                folder = PurePosixPath(entry.path.resolve().parent.relative_to(self.root).as_posix())
                self.by_slug.setdefault((folder / doc_id.strip("/")).as_posix().lower(), entry)
            for name in _names(entry):
                self.by_name.setdefault(name, entry)
        self.excluded_files = frozenset(p.resolve() for p in excluded)
        # A wikilink names a left-out page as it would a kept one: its file, or its folder for an index.
        names = {name_slug(p.parent.name if p.name in _INDEX_FILES else p.stem) for p in self.excluded_files}
        self.excluded_names = frozenset(names - {""})
        self.base_paths = _base_paths(corpus, self.root, self.by_file, self.by_slug)
        """First folders the tree lacks through which absolute links reach its pages (`/docs/`)."""
        self.block_ids = frozenset(i for entry in corpus for i in entry.page.block_ids)
        self.outliner = bool(self.block_ids)
        """A Logseq graph: a `[[name]]` without a page is a page Logseq makes."""

    def judge(self, link: Link, entry: CorpusPage) -> _Judged:
        if link.kind == "block":
            return _OK if link.target in self.block_ids else _Judged("broken", "no block with that id")
        return _resolve(link, entry, entry.path.resolve(), self)

    def target(self, link: Link, entry: CorpusPage) -> LinkTarget:
        """The page and heading `link`, written on `entry`'s page, reaches (block links: none)."""
        judged = self.judge(link, entry)
        if judged.verdict == "ok" and judged.target is not None:
            return LinkTarget(judged.target, judged.anchor)
        return LinkTarget(None, reason=judged.reason or judged.verdict)


@dataclass(frozen=True, slots=True)
class LinkTarget:
    """A link's page and heading fragment as written ("" for the page's top), or why it
    reaches none (`reason`; a link to an asset reaches no page and is not broken)."""

    page: CorpusPage | None
    fragment: str = ""
    reason: str = ""


def check_links(
    corpus: Sequence[CorpusPage], seeds_dir: Path, excluded: Sequence[Path] = ()
) -> LinkCheck:
    """Every internal link of the corpus judged, broken ones in file order. `excluded`: the
    files `seeding.ignore` left out (`markdown.ignored_files`)."""
    return judge_links(corpus, CorpusLinks(corpus, seeds_dir, excluded))


def judge_links(corpus: Sequence[CorpusPage], known: CorpusLinks) -> LinkCheck:
    """`check_links` with the corpus's links already indexed (the seed reuses `known` to find
    the sections links name, `linked_names.with_linked_names`)."""
    broken: list[BrokenLink] = []
    unverifiable: dict[tuple[str, str], UnverifiableAnchor] = {}
    counts = {"external": 0, "excluded": 0, "unwritten": 0}
    for entry in corpus:
        path = entry.path
        for link in entry.page.links:
            judged = known.judge(link, entry)
            if judged.verdict == "broken":
                shown = {"wikilink": f"[[{link.target}]]", "block": f"(({link.target}))",
                         "ref": f":ref:`{link.target}`"}.get(link.kind, link.target)
                broken.append(BrokenLink(path, link.line, shown, judged.reason))
            elif judged.verdict == "unverifiable" and judged.target is not None:
                key = (judged.target.doc.slug, judged.anchor)
                seen = unverifiable.get(key)
                unverifiable[key] = UnverifiableAnchor(key[0], key[1], path, link.line, 1) if seen is None \
                    else UnverifiableAnchor(key[0], key[1], seen.path, seen.line, seen.links + 1)
            elif judged.verdict in counts:
                counts[judged.verdict] += 1
    return LinkCheck(tuple(broken), tuple(unverifiable.values()), counts["external"], counts["excluded"],
                     counts["unwritten"])


PAGE_SUFFIXES = (".md", ".mdx", ".rst")
_INDEX_FILES = ("index.md", "index.mdx", "README.md", "index.rst")


def _page_files(file: Path, suffix: str) -> list[Path]:
    """The files a link may mean, as site generators serve them: the file itself;
    without an extension (`/config/server-options`, `/guides/i18n/`) or with `.html`
    the page of any suffix, else the folder's index page (`/guide/`, `/`)."""
    if suffix in PAGE_SUFFIXES:
        return [file]
    stem = file.with_suffix("") if suffix == ".html" else file
    pages = [stem.with_name(stem.name + ext) for ext in PAGE_SUFFIXES]
    return [*pages, *(stem / name for name in _INDEX_FILES)]


def _under_base_path(relative: PurePosixPath, suffix: str, root: Path) -> list[Path]:
    """A site may serve the tree under a base path (Docusaurus' `/docs/`, a project's
    `/en/stable/`): an absolute link whose first folder the tree does not have is also read
    without it (`/docs/options#quotes` → `options`)."""
    parts = relative.parts[1:]
    if len(parts) < 2 or (root / parts[0]).exists():
        return []
    return _page_files((root / "/".join(parts[1:])).resolve(), suffix)


def _site_address(target: str) -> PurePosixPath:
    """A Markdown link's path, without its fragment and query, as a path."""
    return PurePosixPath(unquote(target.partition("#")[0].partition("?")[0]))


def _base_paths(
    corpus: Sequence[CorpusPage], root: Path, by_file: Mapping[Path, CorpusPage], by_slug: Mapping[str, CorpusPage],
) -> frozenset[str]:
    """The first folders of absolute links that the tree does not have but through which some
    link reaches a page (`_under_base_path`, or a front matter address after it): the site's
    base path, as its own links write it."""
    found: set[str] = set()
    for entry in corpus:
        for link in entry.page.links:
            relative = _site_address(link.target)
            if link.kind != "markdown" or not relative.is_absolute() or len(relative.parts) < 3:
                continue
            first = relative.parts[1]
            if first in found or (root / first).exists():
                continue
            rest = PurePosixPath(*relative.parts[2:])
            if (any(f in by_file for f in _under_base_path(relative, relative.suffix.lower(), root))
                    or _by_slug(PurePosixPath("/", rest), by_slug) is not None):
                found.add(first)
    return frozenset(found)


def _outside_corpus(relative: PurePosixPath, known: CorpusLinks) -> bool:
    """An absolute address whose first folder (or page) the corpus has none of, and which is no
    base path its links use: another part of the site (`/blog/…`, `/enterprise/`)."""
    if len(relative.parts) < 2:
        return False
    first = relative.parts[1]
    named = PurePosixPath(first)
    return (first not in known.base_paths and not (known.root / first).exists()
            and not any((known.root / named.with_suffix(ext)).exists() for ext in PAGE_SUFFIXES))


def _by_slug(relative: PurePosixPath, by_slug: Mapping[str, CorpusPage]) -> CorpusPage | None:
    """The page whose front matter `slug` gives it this address (Docusaurus' `slug: /quickstart`,
    linked as `/docs/quickstart`), with or without the site's base path."""
    path = str(relative.with_suffix("") if relative.suffix.lower() == ".html" else relative).strip("/").lower()
    rest = path.partition("/")[2]
    return by_slug.get(path) or (by_slug.get(rest) if rest else None)


def _by_address(relative: PurePosixPath, path: Path, known: CorpusLinks) -> CorpusPage | None:
    """The page a relative address reaches from the page's own address: Jest's `CLI.md` (served
    at `/docs/cli`) links `configuration#testmatch-arraystring`, the page `Configuration.md`
    (`id: configuration`) is served at. The file's name is not the address (its case, its id)."""
    folder = PurePosixPath(path.parent.relative_to(known.root).as_posix()) if path.is_relative_to(known.root) \
        else PurePosixPath()
    address = posixpath.normpath((folder / relative).as_posix()).lower()
    return None if address.startswith("..") else known.by_slug.get(address.strip("/"))


def _has_anchor(entry: CorpusPage, heading: str) -> bool:
    anchors = entry.page.anchors
    return not heading or anchor_slug(heading) in anchors or heading in anchors


def _anchored(target: CorpusPage, anchor: str, missing: str) -> _Judged:
    """The page is there: its anchor found, unverifiable (its build writes part of it) or broken."""
    if _has_anchor(target, anchor):
        return _Judged("ok", target=target, anchor=anchor)
    if target.page.generated:
        return _Judged("unverifiable", target=target, anchor=anchor)
    return _Judged("broken", missing)


def _resolve(link: Link, doc: CorpusPage, path: Path, known: CorpusLinks) -> _Judged:
    if link.kind == "external":  # reStructuredText: an intersphinx target (rst.py)
        return _Judged("external")
    if link.kind == "ref":  # reStructuredText: rst.py resolved every label it could
        return _Judged("broken", "no `.. _label:` of that name in the corpus")
    if link.kind == "wikilink":
        page, heading = wikilink_target(link.target)
        target = doc if not page else known.by_name.get(name_slug(page))
        if target is None:
            if name_slug(page) in known.excluded_names:
                return _Judged("excluded")
            return _Judged("unwritten" if known.outliner else "broken", "no page with that name")
        return _anchored(target, heading, f"no heading {heading!r} in {target.doc.slug}")
    wrapped = unquote(link.target)
    if wrapped.startswith("[[") and wrapped.endswith("]]"):  # Logseq's `[label]([[Page]])`
        return _resolve(Link(wrapped[2:-2], "wikilink", link.line), doc, path, known)
    location, _, fragment = link.target.partition("#")
    location, _, query = location.partition("?")
    if "q" in parse_qs(query):  # `?q=…`: the site's search (Material's, for one), not a page
        return _Judged("external")
    fragment = unquote(fragment)
    if not location:
        return _anchored(doc, fragment, f"no heading #{fragment} on this page")
    relative = PurePosixPath(unquote(location))
    suffix = relative.suffix.lower()
    if suffix and suffix not in (*PAGE_SUFFIXES, ".html"):
        return _OK  # an asset, not a page
    base = known.root if relative.is_absolute() else path.parent
    file = (base / str(relative).lstrip("/")).resolve()
    candidates = _page_files(file, suffix)
    if suffix == ".rst" and path.suffix == ".rst":
        # A reStructuredText page's `:doc:` and toctree name a Sphinx document, whatever its source
        # file: pip's docs name `topics/repeatable-installs`, a MyST Markdown page (rst.py writes `.rst`).
        candidates += [file.with_suffix(ext) for ext in PAGE_SUFFIXES if ext != ".rst"]
    if suffix not in PAGE_SUFFIXES and not relative.is_absolute() and path.name not in _INDEX_FILES:
        # A link written as an address (`../ingress-nginx/`, `./#custom-domains`) may be relative
        # to the page's own address, one folder deeper than its file (MkDocs serves `a/page.md`
        # at `a/page/`): both readings are tried.
        candidates += _page_files((path.with_suffix("") / str(relative)).resolve(), suffix)
    if relative.is_absolute():
        candidates += _under_base_path(relative, suffix, known.root)
    elif suffix in PAGE_SUFFIXES and DIALECTS[doc.dialect].file_links_from_root:
        candidates.append((known.root / str(relative)).resolve())  # after the page's own folder
    target = next((known.by_file[f] for f in candidates if f in known.by_file), None)
    if target is None and relative.is_absolute():
        target = _by_slug(relative, known.by_slug)
    if target is None and not suffix and not relative.is_absolute():
        target = _by_address(relative, path, known)
    if target is None:
        if any(f in known.excluded_files for f in candidates):
            return _Judged("excluded")
        if relative.is_absolute() and _outside_corpus(relative, known):
            return _Judged("external")
        return _Judged("broken", "no such page in the corpus")
    return _anchored(target, fragment, f"no heading #{fragment} in {target.doc.slug}")
