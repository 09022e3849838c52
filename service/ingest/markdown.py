"""Parse one seed file (`seeds/<category>/<name>.md`) into a Document.

A seed file starts with YAML front matter between two `---` lines:

    ---
    title: Workspace            # required
    category: concepts          # required, must equal the folder name
    keywords: [notes, entries]  # optional; extracted automatically when absent
    summary: One line.          # optional; else the first body paragraph
    slug: concepts/workspace    # optional; default <folder>/<file stem>
    ---

Every problem raises SeedFileError naming the file and the reason.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path
from typing import Any

import msgspec
import yaml

from service.domain.types import CATEGORIES, Document
from service.ingest.keywords import extract_keywords

ALLOWED_KEYS = ("title", "category", "keywords", "summary", "slug")
SUMMARY_MAX = 300
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*$")


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


def _decode(path: Path) -> str:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SeedFileError(
            path, f"not valid UTF-8 (byte 0x{raw[err.start]:02x} at offset {err.start})"
        ) from None
    # Same text on every platform: no BOM, LF line ends, NFC (stable hashes).
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text)


def _split_front_matter(path: Path, text: str) -> tuple[dict[str, Any], str]:
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise SeedFileError(path, "broken front matter: the file must start with a '---' line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise SeedFileError(path, "broken front matter: no closing '---' line") from None
    try:
        meta = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(err, "problem", None) or "invalid YAML"
        raise SeedFileError(path, f"broken front matter: {problem}{where}") from None
    if not isinstance(meta, dict):
        raise SeedFileError(path, "broken front matter: expected 'key: value' pairs")
    unknown = sorted(str(k) for k in meta if k not in ALLOWED_KEYS)
    if unknown:
        raise SeedFileError(
            path, f"unknown front matter key(s) {unknown}; allowed: {', '.join(ALLOWED_KEYS)}"
        )
    return meta, "\n".join(lines[end + 1 :]).strip()


def _string(path: Path, meta: dict[str, Any], key: str) -> str:
    value = meta.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SeedFileError(path, f"'{key}' must be a string")
    return " ".join(value.split())


def _keywords(path: Path, meta: dict[str, Any]) -> tuple[str, ...] | None:
    value = meta.get("keywords")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(k, str) and k.strip() for k in value):
        raise SeedFileError(path, "'keywords' must be a list of non-empty strings")
    seen: dict[str, None] = {}
    for k in value:
        seen.setdefault(" ".join(k.lower().split()), None)
    return tuple(seen)


def first_paragraph(body: str) -> str:
    """The first prose paragraph (not a heading, list or code), whitespace collapsed."""
    for block in re.split(r"\n\s*\n", body):
        block = block.strip()
        if block and not block.startswith(("#", "```", "-", "*", "|", ">")):
            text = " ".join(block.split())
            return text if len(text) <= SUMMARY_MAX else text[: SUMMARY_MAX - 1].rstrip() + "…"
    return ""


def parse_document(path: Path, seeds_dir: Path) -> Document:
    """Parse and validate one seed file."""
    folder = path.parent.name
    text = _decode(path)
    meta, body = _split_front_matter(path, text)
    title = _string(path, meta, "title")
    if not title:
        raise SeedFileError(path, "missing title in front matter")
    category = _string(path, meta, "category")
    if not category:
        raise SeedFileError(path, "missing category in front matter")
    if category not in CATEGORIES:
        raise SeedFileError(
            path, f"unknown category {category!r}; expected one of {', '.join(CATEGORIES)}"
        )
    if category != folder:
        raise SeedFileError(path, f"category {category!r} does not match its folder {folder!r}")
    if not body:
        raise SeedFileError(path, "the document has no content after the front matter")
    slug = _string(path, meta, "slug") or f"{folder}/{path.stem.lower()}"
    if not _SLUG.match(slug) or not slug.startswith(category + "/"):
        raise SeedFileError(path, f"invalid slug {slug!r}; expected '{category}/<name>'")
    keywords = _keywords(path, meta)
    if keywords is None:
        keywords = extract_keywords(title, body)
    summary = _string(path, meta, "summary") or first_paragraph(body)
    return Document(
        slug=slug,
        category=category,
        title=title,
        content=body,
        keywords=keywords,
        summary=summary,
        content_hash=content_hash(
            title=title, category=category, keywords=keywords, summary=summary, content=body
        ),
    )


def seed_files(seeds_dir: Path) -> list[Path]:
    """Markdown files one folder deep (`<category>/<name>.md`), sorted.

    Files at the top level (synonyms, core concepts, READMEs) are not documents.
    """
    if not seeds_dir.is_dir():
        raise FileNotFoundError(f"seeds directory {seeds_dir} does not exist")
    return sorted(p for p in seeds_dir.glob("*/*.md") if p.is_file())


class SeedError(ValueError):
    """The seed set is invalid; `errors` lists every bad file."""

    def __init__(self, errors: list[SeedFileError]) -> None:
        super().__init__("invalid seed data:\n" + "\n".join(f"  {e}" for e in errors))
        self.errors = errors


def parse_seeds(seeds_dir: Path) -> list[Document]:
    """Parse every seed file; raise SeedError listing all bad files, or none."""
    documents: list[Document] = []
    errors: list[SeedFileError] = []
    owner: dict[str, Path] = {}
    for path in seed_files(seeds_dir):
        try:
            doc = parse_document(path, seeds_dir)
        except SeedFileError as err:
            errors.append(err)
            continue
        if doc.slug in owner:
            reason = f"duplicate slug {doc.slug!r} (also {owner[doc.slug]})"
            errors.append(SeedFileError(path, reason))
            continue
        owner[doc.slug] = path
        documents.append(doc)
    if errors:
        raise SeedError(errors)
    return documents
