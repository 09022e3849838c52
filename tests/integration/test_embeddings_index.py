"""Incremental indexing into chunk_embeddings, model change, semantic search and
the HNSW index, on a real PostgreSQL (fixtures from tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest

from service.db.vectors import vector_literal
from service.domain.types import Document
from service.embedding.torch_backend import TorchEmbedder as Embedder
from service.ingest.chunker import chunk_document, content_hash
from service.ingest.indexer import (
    active_model,
    drop_other_models,
    index_embeddings,
    passage_context,
)
from service.scoring.semantic import semantic_search, semantic_sql

DOCS = [
    Document(
        slug="widgets/quick-links",
        category="widgets",
        title="Quick Links",
        content=(
            "# Quick Links\n\nQuick Links holds pinned shortcuts to notes, workspaces and "
            "web addresses.\n\n## Adding links\n\nClick the plus button and pick a target.\n\n"
            "## Editing links\n\nRight-click a link and choose Edit to change its label.\n"
        ),
        keywords=("shortcuts", "links"),
        content_hash="q",
    ),
    Document(
        slug="concepts/notes",
        category="concepts",
        title="Notes",
        content=(
            "# Notes\n\nNotes are the documents you write and annotate.\n\n## Searching notes\n\n"
            "Use the search box at the top of the Navigator to look through every note by "
            "its text.\n\n## Pinning notes\n\nPin a note to keep it at the top of its workspace.\n"
        ),
        keywords=("notes",),
        content_hash="n",
    ),
    Document(
        slug="widgets/quick-capture",
        category="widgets",
        title="Quick Capture",
        content=(
            "# Quick Capture\n\nJot down a thought from the dashboard; the text lands in the "
            "Inbox workspace.\n"
        ),
        keywords=("capture", "inbox"),
        content_hash="c",
    ),
]


class CountingEmbedder:
    """The real model under another name (a model change) that counts its work."""

    def __init__(self, real: Embedder, model_name: str | None = None) -> None:
        self._real = real
        self.model_name = model_name or real.model_name
        self.dim = real.dim
        self.embedded = 0

    def embed_passages(self, items: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        self.embedded += len(items)
        return self._real.embed_passages(items)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._real.embed_query(text)


@pytest.fixture(scope="module")
def real_embedder() -> Embedder:
    return Embedder()


@pytest.fixture
async def pool(migrated_pool: Any) -> AsyncIterator[Any]:
    # conftest's migrated_pool is a fresh database per test; this only renames it
    # (the indexer works on every chunk in the database, so isolation matters).
    yield migrated_pool


async def insert_docs(pool: Any, docs: Sequence[Document]) -> None:
    async with pool.acquire() as conn, conn.transaction():
        for doc in docs:
            await conn.execute(
                "insert into docs_knowledge (slug, category, title, content, keywords, "
                "content_hash) values ($1, $2, $3, $4, $5, $6)",
                doc.slug,
                doc.category,
                doc.title,
                doc.content,
                list(doc.keywords),
                doc.content_hash,
            )
            for c in chunk_document(doc):
                await conn.execute(
                    "insert into docs_knowledge_chunks (doc_slug, category, title, header_path, "
                    "chunk_index, content, keywords, chunk_hash, token_count) "
                    "values ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    c.doc_slug,
                    c.category,
                    c.title,
                    c.header_path,
                    c.chunk_index,
                    c.content,
                    list(c.keywords),
                    c.chunk_hash,
                    c.token_count,
                )


async def test_unchanged_corpus_embeds_nothing_the_second_time(
    pool: Any, real_embedder: Embedder
) -> None:
    await insert_docs(pool, DOCS)
    total = await pool.fetchval("select count(*) from docs_knowledge_chunks")
    embedder = CountingEmbedder(real_embedder)
    first = await index_embeddings(pool, embedder, batch_size=3)
    assert (first.embedded, first.reused, first.total) == (total, 0, total)
    second = await index_embeddings(pool, embedder)
    assert (second.embedded, second.reused, second.total) == (0, total, total)
    assert embedder.embedded == total
    row = await pool.fetchrow("select model, dim from chunk_embeddings limit 1")
    assert (row["model"], row["dim"]) == ("all-MiniLM-L6-v2", 384)


class RecordingEmbedder(CountingEmbedder):
    """Keeps every batch it was given, in order."""

    def __init__(self, real: Embedder) -> None:
        super().__init__(real)
        self.batches: list[list[tuple[str, str]]] = []

    def embed_passages(self, items: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        self.batches.append(list(items))
        return super().embed_passages(items)


async def test_longest_passages_go_first_and_every_vector_lands_on_its_own_chunk(
    pool: Any, real_embedder: Embedder
) -> None:
    await insert_docs(pool, DOCS)
    embedder = RecordingEmbedder(real_embedder)
    await index_embeddings(pool, embedder, batch_size=2)
    # A batch is padded to its longest input: batches of like lengths waste the least.
    lengths = [len(context) + len(text) for batch in embedder.batches for context, text in batch]
    assert len(lengths) > 2 and lengths == sorted(lengths, reverse=True)
    rows = await pool.fetch(
        "select c.title, c.header_path, c.content, e.embedding::text as vector"
        " from chunk_embeddings e join docs_knowledge_chunks c on c.id = e.chunk_id"
    )
    assert len(rows) == len(lengths)
    for row in rows:
        stored = np.array([float(x) for x in row["vector"].strip("[]").split(",")], dtype=np.float32)
        alone = real_embedder.embed_passages([(passage_context(row["header_path"], row["title"]), row["content"])])[0]
        assert float(stored @ alone) > 0.999, row["header_path"]


async def test_edited_chunk_is_the_only_one_re_embedded(pool: Any, real_embedder: Embedder) -> None:
    await insert_docs(pool, DOCS)
    embedder = CountingEmbedder(real_embedder)
    await index_embeddings(pool, embedder)
    new_content = "Right-click a link and choose Rename to change its label."
    edited_id = await pool.fetchval(
        "update docs_knowledge_chunks set content = $1, chunk_hash = $2 "
        "where header_path = 'Quick Links > Editing links' returning id",
        new_content,
        content_hash(new_content),
    )
    before = embedder.embedded
    report = await index_embeddings(pool, embedder)
    assert report.embedded == 1 and embedder.embedded == before + 1
    stored = await pool.fetchval(
        "select chunk_hash from chunk_embeddings where chunk_id = $1", edited_id
    )
    assert stored == content_hash(new_content)
    # A renamed heading changes the model input (context), so it re-embeds too.
    await pool.execute(
        "update docs_knowledge_chunks set header_path = 'Notes > Finding notes' "
        "where header_path = 'Notes > Searching notes'"
    )
    assert (await index_embeddings(pool, embedder)).embedded == 1


async def test_model_change_keeps_old_model_serving_until_complete(
    pool: Any, real_embedder: Embedder
) -> None:
    await insert_docs(pool, DOCS)
    old = CountingEmbedder(real_embedder)
    await index_embeddings(pool, old)
    assert await active_model(pool, old.model_name) == old.model_name

    new = CountingEmbedder(real_embedder, model_name="minilm-v2-candidate")
    total = await pool.fetchval("select count(*) from docs_knowledge_chunks")
    # Simulate an interrupted switch: only some chunks have the new model's vectors.
    seen: list[str] = []
    report = await index_embeddings(pool, new, batch_size=2, progress=seen.append)
    assert report.embedded == total and seen and "chunks/s" in seen[-1]
    await pool.execute(
        "delete from chunk_embeddings where model = $1 and chunk_id in "
        "(select chunk_id from chunk_embeddings where model = $1 limit 2)",
        new.model_name,
    )
    assert await active_model(pool, new.model_name) == old.model_name  # old still serves
    resumed = await index_embeddings(pool, new)
    assert resumed.embedded == 2 and resumed.reused == total - 2
    assert await active_model(pool, new.model_name) == new.model_name
    # Both sets exist until the operator drops the old one.
    assert await drop_other_models(pool, new.model_name) == total
    assert await active_model(pool, old.model_name) == new.model_name


async def test_active_model_without_vectors(pool: Any) -> None:
    assert await active_model(pool, "anything") is None  # no chunks at all
    await insert_docs(pool, DOCS[:1])
    assert await active_model(pool, "anything") is None  # chunks but no vectors


async def test_semantic_search_paraphrase_and_category_filter(
    pool: Any, real_embedder: Embedder
) -> None:
    await insert_docs(pool, DOCS)
    await index_embeddings(pool, real_embedder)
    model, dim = real_embedder.model_name, real_embedder.dim

    query = real_embedder.embed_query("how do I find my notes?")
    hits = await semantic_search(pool, query, model, dim, top_k=3)
    assert hits[0].header_path == "Notes > Searching notes"
    assert hits[0].similarity > hits[-1].similarity
    assert 0 < hits[0].similarity <= 1

    query = real_embedder.embed_query("where are my shortcuts?")
    hits = await semantic_search(pool, query, model, dim, top_k=2)
    assert hits[0].doc_slug == "widgets/quick-links"

    hits = await semantic_search(pool, query, model, dim, top_k=10, category="concepts")
    assert hits and {h.category for h in hits} == {"concepts"}
    # Another model's vectors are never mixed in.
    assert await semantic_search(pool, query, "other-model", dim, top_k=3) == []


async def test_explain_uses_hnsw_index(pool: Any) -> None:
    """On a table of the size where the service uses the index (above
    `semantic.exact_search_max_vectors`) the planner walks the HNSW index, with and
    without the category filter. On a small table it rightly seq-scans (with
    `semantic.ef_search`, which the planner weighs against the table size, 5,000 rows
    are a sequential scan), so this test builds 12,000 rows of random vectors."""
    await pool.execute(
        "insert into docs_knowledge (slug, category, title, content, content_hash) "
        "select 'd' || i, (array['concepts','widgets','actions'])[1 + i % 3], 't', 'c', 'h' "
        "from generate_series(0, 29) i"
    )
    await pool.execute(
        "insert into docs_knowledge_chunks (doc_slug, category, title, chunk_index, content, "
        "chunk_hash) select 'd' || (i % 30), (array['concepts','widgets','actions'])"
        "[1 + (i % 30) % 3], 't', i, 'c', 'h' from generate_series(0, 11999) i"
    )
    await pool.execute(
        "insert into chunk_embeddings (chunk_id, model, dim, chunk_hash, embedding) "
        "select id, 'm', 384, 'h', (select array_agg(random())::vector "
        "from generate_series(1, 384) where id is not null) from docs_knowledge_chunks"
    )
    await pool.execute("analyze")
    query = vector_literal(np.full(384, 0.05, dtype=np.float32))
    for category in (None, "concepts"):
        args: list[object] = [query, "m", *([category] if category else []), 5]
        plan = await pool.fetch("explain " + semantic_sql(384, bool(category)), *args)
        text = "\n".join(r[0] for r in plan)
        assert "Index Scan using chunk_embeddings_hnsw_384" in text, text
        hits = await semantic_search(
            pool, np.full(384, 0.05, dtype=np.float32), "m", 384, 5, category, ef_search=10
        )
        # iterative scan: 5 rows pass the filters although ef_search is 10
        assert len(hits) == 5
        assert not category or {h.category for h in hits} == {category}


async def test_a_second_database_takes_the_vectors_the_model_already_made(
    pool: Any, pg_server: Any, real_embedder: Embedder, tmp_path: Any,
) -> None:
    """`embedding.keep_vectors`: the same corpus in a new database (a replica, a fresh reseed)
    is indexed without running the model; a changed page meets the model for its new text only,
    and what a search returns is the same either way."""
    import asyncpg

    from service.db.migrate import migrate_up
    from service.db.pool import create_pool
    from service.embedding.vector_cache import VectorCache
    from tests.conftest import MIGRATIONS_DIR, _create_database, _drop_database

    known = VectorCache(tmp_path / "vectors", real_embedder.model_name, real_embedder.dim)
    first = CountingEmbedder(real_embedder)
    await insert_docs(pool, DOCS)
    report = await index_embeddings(pool, first, known=known)
    assert first.embedded == report.embedded > 0 and report.known == 0

    name = await _create_database(pg_server)
    try:
        conn = await asyncpg.connect(pg_server.dsn(name))
        try:
            await migrate_up(conn, MIGRATIONS_DIR)
        finally:
            await conn.close()
        other = await create_pool(pg_server.dsn(name), min_size=1, max_size=2)
        try:
            edited = [DOCS[0], DOCS[1], Document(**{**msgspec.structs.asdict(DOCS[2]),
                                                    "content": DOCS[2].content + "\nIt keeps a timestamp.\n",
                                                    "content_hash": "c2"})]
            await insert_docs(other, edited)
            second = CountingEmbedder(real_embedder)
            again = await index_embeddings(other, second, known=known)
            # Only Quick Capture's changed chunk met the model; every other vector came from the cache.
            assert again.embedded == report.embedded and second.embedded == 1 and again.known == report.embedded - 1
            query = real_embedder.embed_query("pin a note at the top")
            found = [await semantic_search(db, query, real_embedder.model_name, real_embedder.dim, top_k=3)
                     for db in (pool, other)]
            assert found[0] and [(h.doc_slug, h.chunk_index, round(h.similarity, 5)) for h in found[0]] == \
                [(h.doc_slug, h.chunk_index, round(h.similarity, 5)) for h in found[1]]
        finally:
            await other.close()
    finally:
        await _drop_database(pg_server, name)


async def test_two_chunks_with_the_same_input_are_kept_as_one_vector(
    pool: Any, real_embedder: Embedder, tmp_path: Any,
) -> None:
    """A page that repeats a section word for word (two "Notes" sections, same text) gives two
    chunks with one model input: both get their vector, and the kept file holds it once."""
    import sqlite3

    from service.embedding.vector_cache import VectorCache

    repeated = Document(slug="concepts/repeated", category="concepts", title="Repeated",
                        content="# Repeated\n\nIntro text here.\n\n## Notes\n\nSame text.\n\n## Notes\n\nSame text.\n",
                        keywords=(), content_hash="r")
    known = VectorCache(tmp_path / "vectors", real_embedder.model_name, real_embedder.dim)
    await insert_docs(pool, [repeated])
    report = await index_embeddings(pool, CountingEmbedder(real_embedder), known=known)
    chunks = await pool.fetchval("select count(*) from docs_knowledge_chunks")
    assert report.embedded == chunks == 3
    assert await pool.fetchval("select count(*) from chunk_embeddings") == 3
    with sqlite3.connect(known.path) as conn:
        assert conn.execute("select count(*) from vectors").fetchone()[0] == 2
