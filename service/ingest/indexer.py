"""Incremental embedding of chunks into `chunk_embeddings` (issues 5, 19).

Each chunk has one vector per representation kind (ingest/representations.py:
body, section, page). Only representations without a current vector for the
embedder's model are embedded: no row for (chunk_id, model, kind), or a row
whose `chunk_hash` (content) or `input_hash` (the exact model input, its kind
included) differs from the chunk's current one. A model change therefore embeds everything for the new
model, while the old model's rows stay and keep serving (`active_model`) until
the new set is complete.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from service.db.vectors import vector_literal
from service.domain.types import Base
from service.flags import RepresentationKind
from service.ingest.model_thread import on_model_thread
from service.ingest.representations import (
    EMBEDDING_INPUT_VERSION,
    REPRESENTATION_KINDS,
    Representation,
    input_hash,
    passage_context,
    representations,
)

__all__ = ["EMBEDDING_INPUT_VERSION", "IndexReport", "active_model", "index_embeddings", "input_hash", "padding_order", "passage_context"]

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


class PassageEmbedder(Protocol):
    model_name: str
    dim: int

    def embed_passages(self, items: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]: ...


class AsyncPassageEmbedder(Protocol):
    """Document embedding elsewhere (service/embedding/remote.py): awaited, not threaded."""

    model_name: str
    dim: int

    async def embed_passages_async(self, items: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]: ...


class KnownVectors(Protocol):
    """Vectors already computed for an exact model input (`service/embedding/vector_cache.py`)."""

    def get(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]: ...

    def put(self, keys: Sequence[str], vectors: npt.NDArray[np.float32]) -> None: ...


class IndexReport(Base, frozen=True):
    embedded: int
    """Vectors written (the model's, or `known`'s for an input it has seen)."""
    reused: int
    total: int
    seconds: float
    model: str = ""
    known: int = 0
    """Of `embedded`, the vectors `KnownVectors` had: the model did not run for them."""

    @property
    def chunks_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


_PENDING_SQL = """
    select c.id, c.chunk_hash, c.chunk_index, coalesce(c.header_path, '') as header_path, c.title, c.content,
           d.summary, first.content as page_opening
    from docs_knowledge_chunks c
    left join docs_knowledge d on d.slug = c.doc_slug
    left join docs_knowledge_chunks first on first.doc_slug = c.doc_slug and first.chunk_index = 0
    order by c.doc_slug, c.chunk_index
"""

_STORED_SQL = """
    select chunk_id, kind, chunk_hash, input_hash, dim from chunk_embeddings where model = $1
"""

# Inserted only if the chunk still exists (a concurrent re-seed may delete it).
_UPSERT_SQL = """
    insert into chunk_embeddings (chunk_id, model, dim, chunk_hash, input_hash, embedding, kind)
    select $1, $2, $3, $4, $5, $6::text::vector, $7
    where exists (select 1 from docs_knowledge_chunks where id = $1)
    on conflict (chunk_id, model, kind) do update
       set dim = excluded.dim, chunk_hash = excluded.chunk_hash,
           input_hash = excluded.input_hash, embedding = excluded.embedding,
           created_at = now()
"""

# A representation the chunk no longer has (its first sentence vanished, it is
# no longer its page's first chunk): its vector would score a stale text.
_DELETE_SQL = "delete from chunk_embeddings where chunk_id = $1 and model = $2 and kind = $3"


class _Pending(NamedTuple):
    chunk_id: Any
    chunk_hash: str
    rep: Representation


def pending_representations(
    rows: Sequence[Mapping[str, Any]], stored: Sequence[Mapping[str, Any]], dim: int,
    kinds: Sequence[RepresentationKind] = REPRESENTATION_KINDS,
) -> tuple[list[_Pending], list[tuple[Any, str]], int]:
    """(to embed, (chunk_id, kind) to delete, how many are current) for one model.

    A vector is current when its chunk content hash, its input hash (the exact
    model input, the kind included) and its dimension all match."""
    have = {(row["chunk_id"], row["kind"]): row for row in stored}
    todo: list[_Pending] = []
    wanted: set[tuple[Any, str]] = set()
    for row in rows:
        reps = representations(
            title=row["title"], header_path=row["header_path"], content=row["content"],
            chunk_index=row["chunk_index"], summary=row["summary"] or "", page_opening=row["page_opening"] or "",
        )
        for rep in reps:
            if rep.kind not in kinds:
                continue
            key = (row["id"], rep.kind)
            wanted.add(key)
            old = have.get(key)
            if not (old is not None and old["chunk_hash"] == row["chunk_hash"]
                    and old["input_hash"] == rep.input_hash and old["dim"] == dim):
                todo.append(_Pending(row["id"], row["chunk_hash"], rep))
    chunk_ids = {row["id"] for row in rows}
    # Rows of deleted chunks go with them (on delete cascade): only the chunk's own stale kinds here.
    stale = [key for key in have if key not in wanted and key[0] in chunk_ids and key[1] in kinds]
    return todo, stale, len(wanted) - len(todo)


def padding_order(context: str, text: str) -> int:
    """Sort key of a passage to embed: longest first (`bench --embedding` measures the gain)."""
    return -(len(context) + len(text))


async def index_embeddings(
    pool: Any,
    embedder: PassageEmbedder | AsyncPassageEmbedder,
    batch_size: int = 64,
    progress: Progress | None = None,
    kinds: Sequence[RepresentationKind] = ("body",),
    known: KnownVectors | None = None,
) -> IndexReport:
    """Embed every representation (of `kinds`) that lacks a current vector for
    `embedder.model_name`; counts are vectors (one per chunk with bodies only).
    Vectors of kinds not asked for are left alone (a flag flip back reuses them).
    `known`: vectors this model already made for the same input (another database);
    the model embeds only the rest, and what it makes is kept there too."""
    started = time.perf_counter()
    model, dim = embedder.model_name, embedder.dim
    rows = await pool.fetch(_PENDING_SQL)
    stored = await pool.fetch(_STORED_SQL, model)
    todo, stale, current = pending_representations(rows, stored, dim, kinds)
    if stale:
        await pool.executemany(_DELETE_SQL, [(chunk_id, model, kind) for chunk_id, kind in stale])
    say = progress or log.info
    if todo:
        say(f"embedding {len(todo)} of {len(todo) + current} vectors ({len(rows)} chunks, {'+'.join(kinds)}) "
            f"with {model} (batch {batch_size})")
    # Bodies first: phase 3 serves a model once every body is current. Within a kind, longest
    # first: a batch is padded to its longest input, so batches of like lengths waste less.
    todo.sort(key=lambda p: (p.rep.kind != "body", padding_order(p.rep.context, p.rep.text)))
    done = from_known = 0
    for start in range(0, len(todo), max(1, batch_size)):
        batch = todo[start : start + batch_size]
        keys = [p.rep.input_hash for p in batch]
        have = await asyncio.to_thread(known.get, keys) if known is not None else {}
        missing = [p for p in batch if p.rep.input_hash not in have]
        made: dict[str, npt.NDArray[np.float32]] = {}
        if missing:
            items = [(p.rep.context, p.rep.text) for p in missing]
            if hasattr(embedder, "embed_passages_async"):
                fresh = await embedder.embed_passages_async(items)
            else:
                fresh = await on_model_thread(embedder.embed_passages, items)
            made = {p.rep.input_hash: v for p, v in zip(missing, fresh, strict=True)}
            if known is not None:  # by key: two chunks with the same input are one vector to keep
                await asyncio.to_thread(known.put, list(made), np.asarray(list(made.values()), dtype=np.float32))
        from_known += len(batch) - len(missing)
        vectors = [have[k] if k in have else made[k] for k in keys]
        await pool.executemany(
            _UPSERT_SQL,
            [
                (p.chunk_id, model, dim, p.chunk_hash, p.rep.input_hash, vector_literal(vector), p.rep.kind)
                for p, vector in zip(batch, vectors, strict=True)
            ],
        )
        done += len(batch)
        elapsed = time.perf_counter() - started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (len(todo) - done) / rate if rate > 0 else 0.0
        say(f"embedded {done}/{len(todo)} chunk vectors ({rate:.1f} chunks/s, ETA {eta:.0f}s)")
    return IndexReport(
        embedded=len(todo),
        reused=current,
        total=len(todo) + current,
        seconds=round(time.perf_counter() - started, 3),
        model=model,
        known=from_known,
    )


_COVERAGE_SQL = """
    select e.model, count(*) filter (where e.chunk_hash = c.chunk_hash) as current,
           max(e.created_at) as newest
    from chunk_embeddings e
    join docs_knowledge_chunks c on c.id = e.chunk_id
    where e.kind = 'body'
    group by e.model
"""


async def active_model(pool: Any, preferred_model: str) -> str | None:
    """The model to serve queries with.

    The preferred model once every chunk has a current vector for it; until
    then the most complete other model (most recent on a tie), so a model
    change never serves a half-built index. The preferred model, partial, when
    no other model has vectors; None when there is nothing to search.
    """
    total = await pool.fetchval("select count(*) from docs_knowledge_chunks")
    if not total:
        return None
    coverage = {row["model"]: row for row in await pool.fetch(_COVERAGE_SQL)}
    preferred = coverage.get(preferred_model)
    if preferred is not None and preferred["current"] >= total:
        return preferred_model
    others = [row for model, row in coverage.items() if model != preferred_model]
    others = [row for row in others if row["current"] > 0]
    if others:
        best = max(others, key=lambda row: (row["current"], row["newest"]))
        return str(best["model"])
    if preferred is not None and preferred["current"] > 0:
        return preferred_model
    return None


async def drop_other_models(pool: Any, keep_model: str) -> int:
    """Delete vectors of every model but `keep_model` (after a completed switch)."""
    result: str = await pool.execute("delete from chunk_embeddings where model <> $1", keep_model)
    return int(result.split()[-1])
