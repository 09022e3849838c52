"""The training pool: documentation sets read as the service reads a corpus.

`../shared/train-corpora/` holds one folder per set with a `SOURCE` file
(repository, commit, licence). Six of them are reserved for labelled evaluation
and are never read here; nor is any folder of the project's own evaluation
corpora (tests/corpora, seeds/).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from service.domain.types import Chunk
from service.ingest.markdown import CorpusPage, CorpusRules, parse_corpus
from service.ingest.seeder import default_chunker
from service.settings import PROJECT_ROOT

DEFAULT_POOL = PROJECT_ROOT.parent / "shared" / "train-corpora"
RESERVED = frozenset({"starlette-docs", "restic-docs", "prettier-docs", "pinia-docs", "helix-docs", "foam-docs"})
"""Sets kept for labelled evaluation: mining them would leak what the model is judged on."""
FORBIDDEN_ROOTS = (PROJECT_ROOT / "tests" / "corpora", PROJECT_ROOT / "seeds")


class PoolError(ValueError):
    """The pool cannot be read (missing, reserved or one of the evaluation corpora)."""


@dataclass(frozen=True)
class PoolSet:
    name: str
    folder: Path
    commit: str
    """The set's repository commit, from its SOURCE file ("" when it names none)."""
    repository: str
    pages: Sequence[CorpusPage]
    chunks: Sequence[Chunk]


def _source_field(text: str, key: str) -> str:
    match = re.search(rf"^{re.escape(key)}:\s*(\S+)", text, re.MULTILINE)
    return match.group(1) if match else ""


def set_names(pool: Path, only: Sequence[str] = ()) -> list[str]:
    """The pool's sets (folders with a SOURCE file), reserved ones left out, sorted."""
    if not pool.is_dir():
        raise PoolError(f"training pool not found: {pool}")
    resolved = pool.resolve()
    for root in FORBIDDEN_ROOTS:
        if resolved == root.resolve() or root.resolve() in resolved.parents:
            raise PoolError(f"{pool} is one of the project's evaluation corpora, never a training pool")
    names = sorted(p.name for p in pool.iterdir() if p.is_dir() and (p / "SOURCE").is_file())
    reserved = [n for n in only if n in RESERVED]
    if reserved:
        raise PoolError(f"reserved for labelled evaluation, never mined: {', '.join(reserved)}")
    missing = [n for n in only if n not in names]
    if missing:
        raise PoolError(f"not in the pool {pool}: {', '.join(missing)}")
    return [n for n in names if n not in RESERVED and (not only or n in only)]


def read_set(pool: Path, name: str, max_tokens: int) -> PoolSet:
    """One set: its pages with their parse (service.ingest.markdown) and its chunks, cut at
    `max_tokens` (the flag `chunking.max_tokens`: the pool is chunked as a corpus is)."""
    folder = pool / name
    source = (folder / "SOURCE").read_text(encoding="utf-8")
    # A page with no text of its own (an include-only page, a stub named by its file) has
    # nothing to mine: left out as `seeding.ignore` would leave it.
    pages = [entry for entry in parse_corpus(folder, CorpusRules()) if not entry.textless]
    chunker = default_chunker(max_tokens)
    chunks = [chunk for entry in pages for chunk in chunker(entry.doc)]
    return PoolSet(name=name, folder=folder, commit=_source_field(source, "commit"),
                   repository=_source_field(source, "repository"), pages=pages, chunks=chunks)
