"""Link check at seed: internal links must reach a page (and heading) of the corpus.

Checked: Markdown links without a scheme (`[t](../x/y.md)`, `[t](y.md#a)`,
`[t](#a)`), wikilinks (`[[Page]]`, `[[Page#Heading]]`, `[[Page|label]]`) and
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

from service.domain.types import Document
from service.ingest.parse import (
    Link,
    anchor_slug,
    name_slug,
    page_of,
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


def _names(doc: Document, path: Path) -> set[str]:
    page = page_of(doc.content)
    names = {doc.slug, name_slug(doc.title), name_slug(path.stem), doc.slug.rsplit("/", 1)[-1]}
    for key in ("alias", "aliases"):
        raw = page.meta.get(key)
        values = raw if isinstance(raw, list) else [raw] if isinstance(raw, str) else []
        names.update(name_slug(str(v)) for v in values)
        if key in page.properties:
            names.update(name_slug(v) for v in property_values(page.properties[key]))
    return {n for n in names if n}


def check_links(corpus: Sequence[tuple[Document, Path]], seeds_dir: Path) -> list[BrokenLink]:
    """Every broken internal link of the corpus, in file order."""
    by_name: dict[str, Document] = {}
    by_file: dict[Path, Document] = {}
    for doc, path in corpus:
        by_file[path.resolve()] = doc
        for name in _names(doc, path):
            by_name.setdefault(name, doc)
    root = seeds_dir.resolve()
    block_ids = frozenset(i for doc, _ in corpus for i in page_of(doc.content).block_ids)
    broken: list[BrokenLink] = []
    for doc, path in corpus:
        for link in page_of(doc.content).links:
            if link.kind == "block":
                reason = "" if link.target in block_ids else "no block with that id"
            else:
                reason = _resolve(link, doc, path.resolve(), root, by_name, by_file)
            if reason:
                shown = {"wikilink": f"[[{link.target}]]", "block": f"(({link.target}))"}.get(
                    link.kind, link.target)
                broken.append(BrokenLink(path, link.line, shown, reason))
    return broken


def _has_anchor(doc: Document, heading: str) -> bool:
    return not heading or anchor_slug(heading) in page_of(doc.content).anchors or heading in page_of(
        doc.content
    ).anchors


def _resolve(
    link: Link, doc: Document, path: Path, root: Path,
    by_name: dict[str, Document], by_file: dict[Path, Document],
) -> str:
    if link.kind == "wikilink":
        page, heading = wikilink_target(link.target)
        target = doc if not page else by_name.get(name_slug(page))
        if target is None:
            return "no page with that name"
        return "" if _has_anchor(target, heading) else f"no heading {heading!r} in {target.slug}"
    wrapped = unquote(link.target)
    if wrapped.startswith("[[") and wrapped.endswith("]]"):  # Logseq's `[label]([[Page]])`
        return _resolve(Link(wrapped[2:-2], "wikilink", link.line), doc, path, root, by_name, by_file)
    location, _, fragment = link.target.partition("#")
    fragment = unquote(fragment)
    if not location:
        return "" if _has_anchor(doc, fragment) else f"no heading #{fragment} on this page"
    relative = PurePosixPath(unquote(location))
    if relative.suffix and relative.suffix.lower() != ".md":
        return ""  # an asset, not a page
    base = root if relative.is_absolute() else path.parent
    file = (base / str(relative).lstrip("/")).resolve()
    if not relative.suffix:
        file = file.with_name(file.name + ".md")
    target = by_file.get(file)
    if target is None:
        return "no such page in the corpus"
    return "" if _has_anchor(target, fragment) else f"no heading #{fragment} in {target.slug}"
