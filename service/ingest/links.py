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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

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
    """Where the corpus's internal links lead: its pages by name and by file."""

    def __init__(self, corpus: Sequence[CorpusPage], seeds_dir: Path) -> None:
        self.by_name: dict[str, CorpusPage] = {}
        self.by_file: dict[Path, CorpusPage] = {}
        for entry in corpus:
            self.by_file[entry.path.resolve()] = entry
            for name in _names(entry):
                self.by_name.setdefault(name, entry)
        self.root = seeds_dir.resolve()

    def target(self, link: Link, entry: CorpusPage) -> LinkTarget:
        """The page and heading `link`, written on `entry`'s page, reaches (block links: none)."""
        return _resolve(link, entry, entry.path.resolve(), self.root, self.by_name, self.by_file)


@dataclass(frozen=True, slots=True)
class LinkTarget:
    """A link's page and heading fragment as written ("" for the page's top), or why it
    reaches none (`reason`; a link to an asset reaches no page and is not broken)."""

    page: CorpusPage | None
    fragment: str = ""
    reason: str = ""


def check_links(corpus: Sequence[CorpusPage], seeds_dir: Path) -> list[BrokenLink]:
    """Every broken internal link of the corpus, in file order."""
    links = CorpusLinks(corpus, seeds_dir)
    block_ids = frozenset(i for entry in corpus for i in entry.page.block_ids)
    broken: list[BrokenLink] = []
    for entry in corpus:
        path = entry.path
        for link in entry.page.links:
            if link.kind == "block":
                reason = "" if link.target in block_ids else "no block with that id"
            else:
                reason = links.target(link, entry).reason
            if reason:
                shown = {"wikilink": f"[[{link.target}]]", "block": f"(({link.target}))",
                         "ref": f":ref:`{link.target}`"}.get(link.kind, link.target)
                broken.append(BrokenLink(path, link.line, shown, reason))
    return broken


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


def _has_anchor(entry: CorpusPage, heading: str) -> bool:
    anchors = entry.page.anchors
    return not heading or anchor_slug(heading) in anchors or heading in anchors


def _resolve(
    link: Link, doc: CorpusPage, path: Path, root: Path,
    by_name: dict[str, CorpusPage], by_file: dict[Path, CorpusPage],
) -> LinkTarget:
    if link.kind == "ref":  # reStructuredText: rst.py resolved every label it could
        return LinkTarget(None, reason="no `.. _label:` of that name in the corpus")
    if link.kind == "wikilink":
        page, heading = wikilink_target(link.target)
        target = doc if not page else by_name.get(name_slug(page))
        if target is None:
            return LinkTarget(None, reason="no page with that name")
        return _at_heading(target, heading, f"no heading {heading!r} in {target.doc.slug}")
    wrapped = unquote(link.target)
    if wrapped.startswith("[[") and wrapped.endswith("]]"):  # Logseq's `[label]([[Page]])`
        return _resolve(Link(wrapped[2:-2], "wikilink", link.line), doc, path, root, by_name, by_file)
    location, _, fragment = link.target.partition("#")
    fragment = unquote(fragment)
    if not location:
        return _at_heading(doc, fragment, f"no heading #{fragment} on this page")
    relative = PurePosixPath(unquote(location))
    suffix = relative.suffix.lower()
    if suffix and suffix not in (*PAGE_SUFFIXES, ".html"):
        return LinkTarget(None)  # an asset, not a page
    base = root if relative.is_absolute() else path.parent
    file = (base / str(relative).lstrip("/")).resolve()
    target = next((by_file[f] for f in _page_files(file, suffix) if f in by_file), None)
    if target is None:
        return LinkTarget(None, reason="no such page in the corpus")
    return _at_heading(target, fragment, f"no heading #{fragment} in {target.doc.slug}")


def _at_heading(target: CorpusPage, heading: str, missing: str) -> LinkTarget:
    if _has_anchor(target, heading):
        return LinkTarget(target, heading)
    return LinkTarget(None, reason=missing)
