"""Semantic leg of hybrid retrieval: query embedding (cached, off the event
loop) and cosine top-K through pgvector's HNSW index."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, get_args

import numpy as np
import numpy.typing as npt

from service.db.errors import DatabaseTimeout, DatabaseUnreachable
from service.db.pool import HNSW_SESSION_SETTINGS
from service.db.vectors import vector_literal
from service.domain.signals import SemanticSignal
from service.domain.types import Base
from service.flags import Flags, RepresentationKind
from service.ingest.model_thread import on_model_thread

# Dimensions that have a partial HNSW index (migration 003). The dimension is
# written into the SQL as a literal (a type modifier cannot be a parameter, and
# the partial-index predicate must be provable at plan time), so it is checked
# against this set first.
INDEXED_DIMS = frozenset({384})
POOL_EF_SEARCH = int(HNSW_SESSION_SETTINGS["hnsw.ef_search"])
MAX_DIM = 16000  # pgvector's limit for `vector`


class QueryEmbedder(Protocol):
    """What the semantic leg needs from an embedding backend (service/embedding; fakes in tests)."""

    model_name: str

    def embed_query(self, text: str) -> npt.NDArray[np.float32]: ...


class SemanticHit(Base, frozen=True):
    """One chunk with its cosine similarity to the query (1 - cosine distance).

    No chunk text: the corpus is in memory (`CorpusIndexes.chunks_by_id`), and
    fetching and decoding the text of every hit cost the event loop on each query."""

    chunk_id: str
    doc_slug: str
    chunk_index: int
    category: str
    title: str
    header_path: str
    chunk_hash: str
    similarity: float
    representation: str = "body"
    """The vector kind that matched best (ingest/representations.py)."""


def searched_exactly(chunks: int, flags: Flags) -> bool:
    """Whether phase 3 compares every vector (`semantic_search(exact=True)`): the corpus's
    vectors, chunks × representations, within `semantic.exact_search_max_vectors`."""
    return chunks * len(flags.semantic.representations) <= flags.semantic.exact_search_max_vectors


def semantic_sql(dim: int, with_category: bool, kinds: Sequence[str] = ("body",), exact: bool = False) -> str:
    """The top-K query for one dimension: same cast and partial predicate as the index.

    The representation kinds are literals (checked against the known ones) so
    that the parameters stay the same whichever kinds are searched. `exact`: ties
    in distance are broken by page, chunk and kind, so that the order is the
    same on every database (run it with index scans off: `semantic_search`)."""
    if not (0 < dim <= MAX_DIM):
        raise ValueError(f"invalid vector dimension {dim}")
    unknown = set(kinds) - set(get_args(RepresentationKind))
    if unknown or not kinds:
        raise ValueError(f"unknown representation kinds {sorted(unknown)}")
    vec = f"vector({int(dim)})"
    kind_list = ", ".join(f"'{k}'" for k in dict.fromkeys(kinds))
    category = "and c.category = $3" if with_category else ""
    limit = "$4" if with_category else "$3"
    # `(select $1::text::vector)` is an InitPlan: the 384-number literal is
    # parsed once per query, not once per row a sequential scan visits
    # (a bare `$1::text::vector` is re-evaluated per row in a generic plan).
    query_vector = f"(select $1::text::{vec})"
    ties = ", c.doc_slug, c.chunk_index, e.kind" if exact else ""
    return f"""
        select c.id::text as chunk_id, c.doc_slug, c.chunk_index, c.category, c.title,
               coalesce(c.header_path, '') as header_path, c.chunk_hash, e.kind,
               1 - (e.embedding::{vec} <=> {query_vector}) as similarity
        from chunk_embeddings e
        join docs_knowledge_chunks c on c.id = e.chunk_id
        where e.dim = {int(dim)} and e.model = $2 and e.kind in ({kind_list}) {category}
        order by e.embedding::{vec} <=> {query_vector}{ties}
        limit {limit}
    """


async def semantic_search(
    pool: Any,
    query_vector: npt.NDArray[np.float32],
    model: str,
    dim: int,
    top_k: int,
    category: str | None = None,
    *,
    ef_search: int | None = None,
    iterative_scan: bool = True,
    kinds: Sequence[str] = ("body",),
    exact: bool = False,
) -> list[SemanticHit]:
    """Cosine top-K chunks for `model` (vectors of other models are ignored).

    `exact`: every vector is compared (a sequential scan, index scans off for the
    transaction) instead of walking the HNSW graph. HNSW is approximate and its
    graph differs from one build to the next (random levels), so two databases
    seeded with the same pages could return different neighbours for one query;
    the caller asks for exact search where the corpus is small enough for it to
    cost little (`semantic.exact_search_max_vectors`).

    With several representation `kinds` the index returns up to top_k vectors
    per kind in one walk; a chunk keeps its best-scoring vector (the kind is
    in `SemanticHit.representation`), so a chunk is found by whichever of its
    representations is nearest, with one query embedding.

    The model and category filters are applied while walking the HNSW graph;
    `iterative_scan` (pgvector >= 0.8) keeps walking until `top_k` rows pass
    them instead of returning fewer (e.g. during a model change, when two
    models share the index). Values other than the pool's session defaults
    are set for one transaction.
    """
    if dim not in INDEXED_DIMS:
        raise ValueError(f"no HNSW index for dimension {dim}; indexed: {sorted(INDEXED_DIMS)}")
    if len(query_vector) != dim:
        raise ValueError(f"query vector has {len(query_vector)} dimensions, model has {dim}")
    top_k = max(1, int(top_k))
    kinds = list(dict.fromkeys(kinds)) or ["body"]
    rows_wanted = top_k * len(kinds)
    args: list[object] = [vector_literal(query_vector), model]
    if category:
        args.append(category)
    args.append(rows_wanted)
    sql = semantic_sql(dim, bool(category), kinds, exact)
    # ef_search (flag `semantic.ef_search`; None: the pool's session value) must be
    # >= top_k or HNSW returns fewer rows.
    ef = max(POOL_EF_SEARCH if ef_search is None else ef_search, rows_wanted)
    if exact:
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("select set_config('enable_indexscan', 'off', true)")
            rows = await conn.fetch(sql, *args)
    elif ef == POOL_EF_SEARCH and iterative_scan:
        # The pool's session settings already say this: one round trip.
        rows = await pool.fetch(sql, *args)
    else:
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "select set_config('hnsw.ef_search', $1, true),"
                " set_config('hnsw.iterative_scan', $2, true)",
                str(ef), "strict_order" if iterative_scan else "off",
            )
            rows = await conn.fetch(sql, *args)
    best: dict[str, Any] = {}
    for row in rows:  # nearest first: the first row of a chunk is its best kind
        best.setdefault(row["chunk_id"], row)
    return [
        SemanticHit(
            chunk_id=row["chunk_id"],
            doc_slug=row["doc_slug"],
            chunk_index=row["chunk_index"],
            category=row["category"],
            title=row["title"],
            header_path=row["header_path"],
            chunk_hash=row["chunk_hash"],
            similarity=float(row["similarity"]),
            representation=row["kind"],
        )
        for row in list(best.values())[:top_k]
    ]


class QueryEmbeddingCache:
    """LRU of recent query vectors keyed by (model, whitespace-normalised text).

    Thread-safe: the pipeline reads it on the event loop while the embedding
    runs in a worker thread. Vectors are stored read-only so a caller cannot
    corrupt a cached entry.
    """

    def __init__(self, max_size: int) -> None:
        if max_size < 0:
            raise ValueError("max_size must be >= 0")
        self.max_size = max_size
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[tuple[str, str], npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(model: str, text: str) -> tuple[str, str]:
        return (model, " ".join(text.split()))

    def get(self, model: str, text: str) -> npt.NDArray[np.float32] | None:
        key = self.key(model, text)
        with self._lock:
            vector = self._items.get(key)
            if vector is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return vector

    def put(self, model: str, text: str, vector: npt.NDArray[np.float32]) -> None:
        if self.max_size == 0:
            return
        frozen = np.array(vector, dtype=np.float32, copy=True)
        frozen.flags.writeable = False
        key = self.key(model, text)
        with self._lock:
            self._items[key] = frozen
            self._items.move_to_end(key)
            while len(self._items) > self.max_size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"size": len(self._items), "hits": self.hits, "misses": self.misses}


class BatchingQueryEmbedder(Protocol):
    """service.embedding.batcher.QueryBatcher: shares forward passes, may refuse."""

    model_name: str

    async def embed(self, text: str) -> npt.NDArray[np.float32]: ...


async def embed_query_async(
    embedder: QueryEmbedder | BatchingQueryEmbedder, text: str, cache: QueryEmbeddingCache | None = None
) -> npt.NDArray[np.float32]:
    """The query's vector from the cache, else from the batcher (or the model thread)."""
    if cache is not None:
        cached = cache.get(embedder.model_name, text)
        if cached is not None:
            return cached
    if hasattr(embedder, "embed"):
        vector = await embedder.embed(text)
    else:
        vector = await on_model_thread(embedder.embed_query, text)
    if cache is not None:
        cache.put(embedder.model_name, text, vector)
    return vector


class SemanticSearch(Protocol):
    """The semantic leg as phase 3 sees it (tests substitute their own)."""

    async def search(
        self, text: str, top_k: int, category: str | None, flags: Flags, exact: bool = False,
    ) -> tuple[list[SemanticHit], dict[str, float]]: ...


@dataclass
class SemanticLeg:
    """What phase 3 needs beyond memory: the model, its query cache, the pool."""

    embedder: Any
    """`service.embedding.batcher.QueryBatcher` over the loaded backend (or a bare embedder)."""
    cache: QueryEmbeddingCache
    pool: Callable[[], Any]
    """The current asyncpg pool, or None while the database is down."""
    model: Callable[[], Awaitable[str | None]]
    """The model whose vectors are complete (the old one during a model change)."""
    timings: dict[str, float] = field(default_factory=dict)

    async def search(
        self, text: str, top_k: int, category: str | None, flags: Flags, exact: bool = False,
    ) -> tuple[list[SemanticHit], dict[str, float]]:
        pool = self.pool()
        if pool is None:
            raise DatabaseUnreachable("no connection pool (the database is starting or restarting)")
        model = await asyncio.wait_for(self.model(), timeout=flags.timeouts.db_ms / 1000)
        if model is None:
            raise LookupError("no embeddings indexed yet")
        if model != self.embedder.model_name:
            # Query and passage vectors must come from the same model: while this
            # replica's model is still being indexed, phase 2 answers instead
            # (replicas still running the old model keep serving its vectors).
            raise LookupError(f"embeddings for {self.embedder.model_name} incomplete (complete: {model})")
        started = time.perf_counter()
        vector = await embed_query_async(self.embedder, text, self.cache)
        embedded = time.perf_counter()
        try:
            hits = await asyncio.wait_for(
                semantic_search(
                    pool, vector, model, self.embedder.dim, top_k, category,
                    ef_search=flags.semantic.ef_search, kinds=flags.semantic.representations, exact=exact,
                ),
                timeout=flags.timeouts.db_ms / 1000,
            )
        except TimeoutError as err:
            raise DatabaseTimeout(flags.timeouts.db_ms) from err
        done = time.perf_counter()
        return hits, {
            "embed_ms": round((embedded - started) * 1000, 3),
            "vector_search_ms": round((done - embedded) * 1000, 3),
        }


def semantic_signal(hits: Sequence[SemanticHit]) -> SemanticSignal:
    """The nearest neighbour's similarity and its margin over the best other page."""
    if not hits:
        return SemanticSignal(top_similarity=0.0, margin=0.0, top_doc=None)
    best = max(hits, key=lambda h: h.similarity)
    other = max((h.similarity for h in hits if h.doc_slug != best.doc_slug), default=0.0)
    return SemanticSignal(top_similarity=best.similarity, margin=best.similarity - other, top_doc=best.doc_slug)
