"""A folder tree of Markdown files → Documents (any documentation set).

Rules (docs/operations/seeding.md; dialects: service/ingest/dialects.py):
- **Pages**: every `*.md` and `*.mdx` under the root, at any depth, except hidden
  paths (`.git/`, `.obsidian/`), files at the root whose name has letters but no
  lower-case one (`README.md`, `LICENSE.md`, `SOURCE.md`, `BODY_ONLY_WORDS.md`:
  they describe the corpus, they are not pages; `404.md` is a page), a folder's
  `README.md` next to its `index.md` (MkDocs: index.md wins) and the globs of
  `seeding.ignore`. Every skipped file is logged once with its reason.
- **slug**: front matter `slug` or `permalink`, else the path relative to the
  root without its extension, each segment lower-cased with every run of characters
  outside a–z0–9 turned into one `-` (`Plugins/Command palette.md` →
  `plugins/command-palette`; Logseq's `A___B.md` → `a-b`); a folder's index page
  (`index.md`, `index.mdx`, `README.md`) takes the folder's slug
  (`user-guide/README.md` → `user-guide`), the root's `index.md` is `index`. Two files with one
  slug fail the seed naming both, with one exception taken from Logseq, where
  a `title::` property names the page whatever its file is called: a colliding
  outliner page whose `title::` gives another slug takes that one
  (`term.page title.md` with `title:: custom page title` → `custom-page-title`,
  next to `term___page title.md` → `term-page-title`).
- **title**: front matter `title` (or the outliner `title::` property), else the
  first `# ` heading, else the file name (percent-escapes decoded: Logseq
  writes `?` as `%3F`).
- **content**: the cleaned page; a page with properties only (a Logseq tag or
  property page) gets its properties as text (`type: Command`), so it is kept
  and findable rather than rejected.
- **category**: front matter `category` (or `category::`), else the first folder
  as a slug, else `seeding.default_category`.
- **keywords**: front matter `keywords` (else extracted), plus `aliases` /
  `alias::` and `tags` / `tags::`. Other keys are ignored, never rejected.
- **summary**: front matter `summary`, else `description` / `description::`,
  else the first paragraph, else the first block's text.
- **stub**: a page with nothing to say on its own (only an include line, a
  directive, a link list, properties or components; dialects.py) is kept for
  links and `/documents` but marked; one whose body is empty once its dialect is
  read (a `<Home />` landing page) gets its description, else its title, as text; one
  with no text and no title at all (only `.. include::` of a file outside the corpus, an
  empty file) is a stub named by its file.
Broken YAML fails the seed naming the file and line; nothing is written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fnmatch
import functools
import hashlib
import logging
import os
import re
import stat
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

import msgspec

from service.domain.types import Document
from service.flags import SeedingFlags
from service.ingest.dialects import AUTO, Dialect, detect_dialect, dialect_spec
from service.ingest.includes import IncludeReader
from service.ingest.keywords import extract_keywords
from service.ingest.parse import (
    FrontMatterError,
    ParsedPage,
    clean_inline,
    name_slug,
    parse_page,
    property_values,
)
from service.ingest.rst import (
    LINE_LENGTH_LIMIT,
    RstError,
    SphinxProject,
    docname_of,
    parse_rst_page,
    project_of_files,
    rst_slug,
)

SUMMARY_MAX = 300
INDEX_PAGES = ("index.md", "index.mdx", "readme.md")
"""A folder's own page (lower-cased names), in precedence order: the folder's slug."""

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CorpusRules:
    """The seeding flags that shape documents (flags.yaml `seeding:`)."""

    default_category: str = SeedingFlags().default_category
    ignore: tuple[str, ...] = ()
    dialect: str = AUTO
    """`seeding.dialect`: a name of service/ingest/dialects.py, or `auto` (detected per seed)."""


class SeedFileError(ValueError):
    """One seed file is malformed."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def content_hash(
    *, title: str, category: str, keywords: tuple[str, ...], summary: str, content: str
) -> str:
    """sha256 over a canonical JSON of everything a reader can see."""
    canonical = msgspec.json.encode(
        {"title": title, "category": category, "keywords": list(keywords),
         "summary": summary, "content": content}
    )
    return hashlib.sha256(canonical).hexdigest()


MAX_PAGE_BYTES = 1024 * 1024
"""A larger file is refused unread: 5x the largest page of the five vendored documentation
sets (Logseq's Changelog, 195 KB); docs/operations/seeding-safety.md has the time it bounds."""
MAX_NESTING = 20
"""Lists and quotes one line may open inside each other: markdown-it's `maxNesting` in the
commonmark preset (service/ingest/parse.py), past which it reads the rest as text."""
_NESTED = re.compile(rf"^[ \t]*(?:>[ \t]*|(?:[-*+]|\d{{1,9}}[.)])[ \t]+){{{MAX_NESTING + 1},}}", re.MULTILINE)
ReadHook = Callable[[Path], None]
_read_hooks: list[ReadHook] = []


@contextlib.contextmanager
def before_each_read(hook: ReadHook) -> Iterator[None]:
    """Run `hook(path)` right before each page is read: the seam through which a test changes
    the tree between the listing and the reading (a file that disappears), with no timing."""
    _read_hooks.append(hook)
    try:
        yield
    finally:
        _read_hooks.remove(hook)


def _decode(path: Path, root: Path | None = None) -> str:
    """A page's text, or a SeedFileError saying why it is not one. With `root`, a symlink is
    read only when it resolves to a file inside `root` (SEEDS_DIR)."""
    for hook in tuple(_read_hooks):
        hook(path)
    raw = _read_bounded(path, root)
    if (nul := raw.find(b"\0")) >= 0:
        raise SeedFileError(path, f"a binary file, not text (NUL byte at offset {nul})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise SeedFileError(
            path, f"not valid UTF-8 (byte 0x{raw[err.start]:02x} at offset {err.start}, line {line}):"
            " save it as UTF-8"
        ) from None
    # Same text on every platform: no BOM, LF line ends, NFC (stable hashes).
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    longest = max(map(len, text.split("\n")))
    if longest > LINE_LENGTH_LIMIT:  # the RST reader's limit, for every page alike
        raise SeedFileError(path, f"a line longer than {LINE_LENGTH_LIMIT:,} characters ({longest:,})")
    if nested := _NESTED.search(text):
        line = text.count("\n", 0, nested.start()) + 1
        raise SeedFileError(path, f"line {line}: more than {MAX_NESTING} lists or quotes inside each other")
    return unicodedata.normalize("NFC", text)


def _read_bounded(path: Path, root: Path | None) -> bytes:
    """At most MAX_PAGE_BYTES of a regular file; the size is checked before reading."""
    try:
        if root is not None and path.is_symlink():
            _inside(path, root)
        # O_NONBLOCK: a FIFO swapped in after the listing fails the regular-file check instead of hanging.
        handle = os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb")
    except FileNotFoundError:
        raise SeedFileError(path, "the file disappeared while seeding (deleted or renamed after the "
                                  "folder was listed); seed again") from None
    except OSError as err:
        raise SeedFileError(path, f"cannot be read: {err.strerror or err}") from None
    with handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SeedFileError(path, "not a regular file")
        too_large = f"larger than {MAX_PAGE_BYTES:,} bytes, the limit per page (not read)"
        if info.st_size > MAX_PAGE_BYTES:
            raise SeedFileError(path, f"{info.st_size:,} bytes: {too_large}")
        raw = handle.read(MAX_PAGE_BYTES + 1)
    if len(raw) > MAX_PAGE_BYTES:  # it grew after the size check
        raise SeedFileError(path, too_large)
    return raw


def _inside(link: Path, root: Path) -> None:
    """A symlink is followed only to a file inside `root`; a loop, a dangling link or one leading
    out of SEEDS_DIR is a bad file (what is outside may be anything: /etc, another project)."""
    try:
        target = link.resolve(strict=True)
    except FileNotFoundError:
        raise SeedFileError(link, f"a symlink to {os.readlink(link)!r}, which does not exist") from None
    except (RuntimeError, OSError) as err:  # 3.11 raises RuntimeError on a loop, later versions ELOOP
        if isinstance(err, RuntimeError) or err.errno == errno.ELOOP:
            raise SeedFileError(link, "a symlink loop (not followed)") from None
        raise SeedFileError(link, f"a symlink that cannot be followed: {err}") from None
    if not target.is_relative_to(root.resolve()):
        raise SeedFileError(link, f"a symlink to {target}, outside SEEDS_DIR (not followed)")


def _string(path: Path, meta: dict[str, Any], key: str) -> str:
    value = meta.get(key)
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise SeedFileError(path, f"'{key}' must be a string")
    return " ".join(value.split())


def _string_list(path: Path, meta: dict[str, Any], key: str) -> list[str] | None:
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        # Jekyll, Hugo and Foam sites write `keywords: a, b` as often as a YAML list.
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(k, str) and k.strip() for k in value):
        raise SeedFileError(path, f"'{key}' must be a list of non-empty strings")
    return [str(k) for k in value]


def _unique(words: Sequence[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for word in words:
        key = " ".join(word.lower().split())
        if key:
            seen.setdefault(key, None)
    return tuple(seen)


def _summary(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_MAX else text[: SUMMARY_MAX - 1].rstrip() + "…"


def path_slug(relative: PurePosixPath, name: str | None = None) -> str:
    """`Plugins/Command palette.md` → `plugins/command-palette` (`name` replaces the stem)."""
    parts = [*relative.parts[:-1], name or relative.stem]
    return "/".join(name_slug(p) or "-" for p in parts)


def page_slug(relative: PurePosixPath) -> str:
    """A page's slug from its path: a folder's index page takes the folder's
    (`guide/index.md`, `user-guide/README.md` → `guide`, `user-guide`); the root's
    `index.md` is `index`."""
    if len(relative.parts) > 1 and relative.name.lower() in INDEX_PAGES:
        return path_slug(relative.parent.with_suffix(".md"))
    return path_slug(relative)


def page_dialect(rules: CorpusRules, seeds_dir: Path) -> Dialect:
    """The dialect of `rules` (`auto`: detected from the tree, service/ingest/dialects.py)."""
    if rules.dialect == AUTO:
        return detect_dialect(seeds_dir, seed_files(seeds_dir, rules, quiet=True))
    return dialect_spec(rules.dialect).name


_SKIPPED_PROPERTIES = ("title", "id", "collapsed", "public", "filters")


def _properties_text(properties: dict[str, str]) -> str:
    """`type:: [[Command]]` → `type: Command`, one line each (pages with nothing else)."""
    return "\n".join(
        f"{key}: {', '.join(property_values(value)) or clean_inline(value)}"
        for key, value in properties.items() if key not in _SKIPPED_PROPERTIES and value.strip()
    )


@dataclass(frozen=True, slots=True)
class CorpusPage:
    """A parsed page: the document, its file and its parse (properties, links, anchors)."""

    doc: Document
    path: Path
    page: ParsedPage
    textless: bool = False
    """The page has no text of its own: its content is its file's name (a stub)."""
    dialect: Dialect = Dialect.markdown
    """The corpus's dialect the page was read in (`page_dialect`): how its links to files resolve
    (service/ingest/links.py)."""


def _parse_entry(
    path: Path, seeds_dir: Path, rules: CorpusRules, project: SphinxProject | None, includes: IncludeReader,
) -> CorpusPage:
    relative = PurePosixPath(path.relative_to(seeds_dir).as_posix())
    dialect = page_dialect(rules, seeds_dir)
    try:
        text = includes.text(path)
        if path.suffix == ".rst":  # Sphinx: reStructuredText, read by service/ingest/rst.py
            page = parse_rst_page(text, docname=docname_of(relative), project=project)
        else:
            page = parse_page(text, dialect, mdx=path.suffix.lower() == ".mdx")
    except (FrontMatterError, RstError) as err:
        raise SeedFileError(path, str(err)) from None
    meta, props = page.meta, page.properties
    content = page.body if page.sections else _properties_text(props)
    stub = page.stub
    if not content.strip():
        # A landing page its generator fills with components: its name and description.
        content = _string(path, meta, "description") or _string(path, meta, "title") or page.h1 or ""
        stub = True
    name = " ".join(props.get("title", "").split())
    title = _string(path, meta, "title") or name or page.h1 or unquote(relative.stem)
    textless = not content.strip()
    if textless:
        # Nothing of its own, not even a title (Sphinx's `.. include:: ../../CONTRIBUTING.rst`,
        # an empty file): kept as a stub named by its file, so that links to it resolve and one
        # such page does not stop the corpus from seeding.
        log.info("seed: %s has no text of its own (only an include or nothing): kept as a stub page named %r",
                 relative.as_posix(), title)
        content, stub = title, True
    category = _string(path, meta, "category") or props.get("category", "").strip()
    if not category:
        category = name_slug(relative.parts[0]) if len(relative.parts) > 1 else rules.default_category
    slug = _site_slug(path, meta, relative, dialect)
    slug = slug or (rst_slug(relative) if path.suffix == ".rst" else page_slug(relative))
    keywords = _keywords(path, page)
    summary = (
        _string(path, meta, "summary") or _string(path, meta, "description")
        or _summary(clean_inline(props.get("description", "")))
        or _summary(page.first_paragraph) or _summary(page.first_text)
    )
    return CorpusPage(doc=Document(
        slug=slug,
        category=category,
        title=title,
        content=content,
        keywords=keywords,
        summary=summary,
        content_hash=content_hash(
            title=title, category=category, keywords=keywords, summary=summary, content=content
        ),
        stub=stub,
    ), path=path, page=page, textless=textless, dialect=dialect)


def _site_slug(path: Path, meta: dict[str, Any], relative: PurePosixPath, dialect: Dialect) -> str:
    """The page's address on its site where the front matter sets it, else "": its `slug` or
    `permalink`; under Docusaurus a `slug` without a leading `/` is under the page's folder and,
    without a `slug`, an `id` replaces the file's name (`usage/WritingTests.mdx` with
    `id: writing-tests` is served at `usage/writing-tests`)."""
    given = _string(path, meta, "slug") or _string(path, meta, "permalink")
    docusaurus = dialect == Dialect.docusaurus
    if given.strip("/"):
        if docusaurus and len(relative.parts) > 1 and not given.startswith("/"):
            return f"{path_slug(relative.parent.with_suffix('.md'))}/{given.strip('/')}"
        return given.strip("/")
    doc_id = _string(path, meta, "id").strip("/") if docusaurus else ""
    if doc_id and relative.name.lower() not in INDEX_PAGES:
        return path_slug(relative, doc_id)
    return ""


def _keywords(path: Path, page: ParsedPage) -> tuple[str, ...]:
    meta, props = page.meta, page.properties
    listed = _string_list(path, meta, "keywords")
    title = _string(path, meta, "title") or props.get("title", "") or page.h1 or path.stem
    base = listed if listed is not None else list(extract_keywords(title, page))
    extra: list[str] = []
    for key in ("aliases", "alias", "tags"):
        extra.extend(_string_list(path, meta, key) or [])
        if key in props:
            extra.extend(property_values(props[key]))
    return _unique([*base, *extra])


def seed_files(seeds_dir: Path, rules: CorpusRules = CorpusRules(), quiet: bool = False) -> list[Path]:
    """Pages under `seeds_dir` (module docstring), sorted; each skipped file logged once
    with its reason (`quiet`: not logged, for a second look at the same tree)."""
    pages, skipped = _listing(seeds_dir, rules)
    if not quiet:
        for path, reason in sorted(skipped):
            log.info("seed: skipped %s: %s", path.relative_to(seeds_dir).as_posix(), reason)
    return pages


_IGNORED = "matches seeding.ignore"


def ignored_files(seeds_dir: Path, rules: CorpusRules) -> list[Path]:
    """The page files `seeding.ignore` leaves out: links into them are not broken (links.py)."""
    if not rules.ignore:
        return []
    return sorted(path for path, reason in _listing(seeds_dir, rules)[1] if reason == _IGNORED)


def _listing(seeds_dir: Path, rules: CorpusRules) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The pages, sorted, and each skipped page file with its reason."""
    if not seeds_dir.is_dir():
        raise FileNotFoundError(f"seeds directory {seeds_dir} does not exist")
    pages: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in (p for pattern in ("*.md", "*.mdx", "*.rst") for p in seeds_dir.rglob(pattern)):
        relative = path.relative_to(seeds_dir)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if not path.is_file() and not path.is_symlink():
            continue  # a folder named *.md, a FIFO; symlinks are judged when read (_decode)
        if len(relative.parts) == 1 and _about_the_corpus(path.stem) and not _site_page(path):
            skipped.append((path, "a note about the corpus at its root (no lower-case letter in its name)"))
            continue
        if path.name.lower() == "readme.md" and any(
            (path.parent / name).is_file() for name in INDEX_PAGES[:2]
        ):
            skipped.append((path, "the folder's index.md is its index page (README.md would take the same slug)"))
            continue
        posix = relative.as_posix()
        if any(fnmatch.fnmatchcase(posix, g) or fnmatch.fnmatchcase(path.name, g) for g in rules.ignore):
            skipped.append((path, _IGNORED))
            continue
        pages.append(path)
    return sorted(pages), skipped


def _about_the_corpus(stem: str) -> bool:
    """README, LICENSE, SOURCE: letters but none lower-case (`404` has no letters: a page)."""
    return any(ch.isalpha() for ch in stem) and not any(ch.islower() for ch in stem)


_PAGE_KEYS = re.compile(r"^(?:title|id|slug)\s*:", re.MULTILINE)
SITE_PAGE_HEAD_BYTES = 4096
"""How much of a root file is read to find its front matter."""


def _site_page(path: Path) -> bool:
    """A root file its site renders as a page whatever its name: front matter naming it (`title:`,
    `id:` or `slug:`), as Jest's `CLI.md` (`id: cli`, "Jest CLI Options") and Redux's `FAQ.md`."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SITE_PAGE_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    if not head.startswith("---"):
        return False
    matter, closed, _ = head[3:].partition("\n---")
    return bool(closed) and _PAGE_KEYS.search(matter) is not None


class SeedError(ValueError):
    """The seed set is invalid; `errors` lists every bad file."""

    def __init__(self, errors: list[SeedFileError]) -> None:
        super().__init__("invalid seed data:\n" + "\n".join(f"  {e}" for e in errors))
        self.errors = errors


def parse_seeds(seeds_dir: Path, rules: CorpusRules = CorpusRules()) -> list[Document]:
    """Parse every page; raise SeedError listing all bad files, or none."""
    return [entry.doc for entry in parse_corpus(seeds_dir, rules)]


def parse_corpus(seeds_dir: Path, rules: CorpusRules = CorpusRules()) -> list[CorpusPage]:
    """Every page with its file and parse; raise SeedError listing all bad files, or none."""
    parsed: list[CorpusPage] = []
    errors: list[SeedFileError] = []
    files = seed_files(seeds_dir, rules)
    flag = rules.dialect
    if rules.dialect == AUTO:  # detected once per seed, not once per page
        rules = dataclasses.replace(rules, dialect=detect_dialect(seeds_dir, files).value)
    log.info("seed: %s read as %s", seeds_dir, _readers(files, rules.dialect, flag))
    includes = IncludeReader(seeds_dir, files, functools.partial(_decode, root=seeds_dir), MAX_PAGE_BYTES)
    project = project_of_files(seeds_dir, files, includes.text)  # `:ref:` labels span pages
    for path in files:
        try:
            parsed.append(_parse_entry(path, seeds_dir, rules, project, includes))
        except SeedFileError as err:
            errors.append(err)
    _log_includes(includes)
    counts = Counter(entry.doc.slug for entry in parsed)
    documents: list[CorpusPage] = []
    owner: dict[str, Path] = {}
    for entry in parsed:
        if counts[entry.doc.slug] > 1:
            entry = _named_by_title_property(entry, seeds_dir)
        doc, path = entry.doc, entry.path
        if doc.slug in owner:
            reason = f"duplicate slug {doc.slug!r}: {owner[doc.slug]} and {path}"
            errors.append(SeedFileError(path, reason))
            continue
        owner[doc.slug] = path
        documents.append(entry)
    if errors:
        raise SeedError(errors)
    return documents


def _log_includes(includes: IncludeReader) -> None:
    """What the pages include, read in place or left as written (service/ingest/includes.py)."""
    if not includes.read_in and not includes.left_out:
        return
    examples = "; ".join(f"{name}: {why}" for name, why in list(includes.left_out.items())[:5])
    log.info("seed: %d include(s) read in place, %d left as written%s", includes.read_in,
             len(includes.left_out), f", e.g. {examples}" if examples else "")


def _readers(files: Sequence[Path], dialect: str, flag: str) -> str:
    """Which reader reads how many pages: `reStructuredText (15 pages)`, `reStructuredText
    (50 pages) and markdown (40 pages; seeding.dialect auto)` (the flag names Markdown's)."""
    rst = sum(1 for path in files if path.suffix == ".rst")
    markdown = len(files) - rst

    def pages(n: int) -> str:
        return f"{n} page{'' if n == 1 else 's'}"

    said = f"{dialect} ({pages(markdown)}; seeding.dialect {flag})"
    if not rst:
        return said
    return f"reStructuredText ({pages(rst)})" + (f" and {said}" if markdown else "")


def _named_by_title_property(entry: CorpusPage, seeds_dir: Path) -> CorpusPage:
    """A colliding outliner page named otherwise by its `title::` takes that name's slug."""
    name = " ".join(entry.page.properties.get("title", "").split())
    if not name:
        return entry
    slug = path_slug(PurePosixPath(entry.path.relative_to(seeds_dir).as_posix()), name)
    if slug == entry.doc.slug:
        return entry
    return dataclasses.replace(entry, doc=msgspec.structs.replace(entry.doc, slug=slug))
