"""Incremental embedding of chunks into `chunk_embeddings` (issue 5).

Only chunks without a current vector for the embedder's model are embedded:
no row for (chunk_id, model), or a row whose `chunk_hash` (content) or
`input_hash` (header path + content, the exact model input) differs from the
chunk's current one. A model change therefore embeds everything for the new
model, while the old model's rows stay and keep serving (`active_model`) until
the new set is complete.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from service.db.vectors import vector_literal
from service.domain.types import Base
from service.ingest.model_thread import on_model_thread

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


class IndexReport(Base, frozen=True):
    embedded: int
    reused: int
    total: int
    seconds: float
    model: str = ""

    @property
    def chunks_per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds > 0 else 0.0


def passage_context(header_path: str | None, title: str) -> str:
    """The context an embedded chunk carries: its breadcrumb (which starts with
    the document title), or the title when the chunk has no breadcrumb."""
    return header_path or title


# Bump when the way passages are turned into model input changes (context
# format, windowing): every stored vector then no longer matches and is
# re-embedded on the next indexing run (the "schema version bump" trigger).
EMBEDDING_INPUT_VERSION = 1


def input_hash(context: str, content: str) -> str:
    """MD5 of the exact model input and its format version, so a renamed heading
    or a new input format also re-embeds."""
    return hashlib.md5(f"v{EMBEDDING_INPUT_VERSION}\n{context}\n{content}".encode()).hexdigest()


_PENDING_SQL = """
    select c.id, c.chunk_hash, coalesce(c.header_path, '') as header_path, c.title, c.content,
           e.chunk_hash as e_chunk_hash, e.input_hash as e_input_hash, e.dim as e_dim
    from docs_knowledge_chunks c
    left join chunk_embeddings e on e.chunk_id = c.id and e.model = $1
    order by c.doc_slug, c.chunk_index
"""

# Inserted only if the chunk still exists (a concurrent re-seed may delete it).
_UPSERT_SQL = """
    insert into chunk_embeddings (chunk_id, model, dim, chunk_hash, input_hash, embedding)
    select $1, $2, $3, $4, $5, $6::text::vector
    where exists (select 1 from docs_knowledge_chunks where id = $1)
    on conflict (chunk_id, model) do update
       set dim = excluded.dim, chunk_hash = excluded.chunk_hash,
           input_hash = excluded.input_hash, embedding = excluded.embedding,
           created_at = now()
"""


async def index_embeddings(
    pool: Any,
    embedder: PassageEmbedder | AsyncPassageEmbedder,
    batch_size: int = 64,
    progress: Progress | None = None,
) -> IndexReport:
    """Embed every chunk that lacks a current vector for `embedder.model_name`."""
    started = time.perf_counter()
    model, dim = embedder.model_name, embedder.dim
    rows = await pool.fetch(_PENDING_SQL, model)
    todo: list[tuple[Any, str, str, str, str]] = []  # id, chunk_hash, input hash, context, text
    for row in rows:
        context = passage_context(row["header_path"], row["title"])
        wanted = input_hash(context, row["content"])
        current = (
            row["e_chunk_hash"] == row["chunk_hash"]
            and row["e_input_hash"] == wanted
            and row["e_dim"] == dim
        )
        if not current:
            todo.append((row["id"], row["chunk_hash"], wanted, context, row["content"]))
    say = progress or log.info
    if todo:
        say(f"embedding {len(todo)} of {len(rows)} chunks with {model} (batch {batch_size})")
    done = 0
    for start in range(0, len(todo), max(1, batch_size)):
        batch = todo[start : start + batch_size]
        items = [(context, text) for _, _, _, context, text in batch]
        if hasattr(embedder, "embed_passages_async"):
            vectors = await embedder.embed_passages_async(items)
        else:
            vectors = await on_model_thread(embedder.embed_passages, items)
        await pool.executemany(
            _UPSERT_SQL,
            [
                (chunk_id, model, dim, chunk_hash, wanted, vector_literal(vector))
                for (chunk_id, chunk_hash, wanted, _, _), vector in zip(batch, vectors, strict=True)
            ],
        )
        done += len(batch)
        elapsed = time.perf_counter() - started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (len(todo) - done) / rate if rate > 0 else 0.0
        say(f"embedded {done}/{len(todo)} chunks ({rate:.1f} chunks/s, ETA {eta:.0f}s)")
    return IndexReport(
        embedded=len(todo),
        reused=len(rows) - len(todo),
        total=len(rows),
        seconds=round(time.perf_counter() - started, 3),
        model=model,
    )


_COVERAGE_SQL = """
    select e.model, count(*) filter (where e.chunk_hash = c.chunk_hash) as current,
           max(e.created_at) as newest
    from chunk_embeddings e
    join docs_knowledge_chunks c on c.id = e.chunk_id
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
