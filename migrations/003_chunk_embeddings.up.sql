-- Phase 3: one vector per (chunk, model). The column is an untyped `vector`
-- so that several models (of different dimensions) can live side by side
-- during a model change: the old model keeps serving until the new set is
-- complete. `dim` records the dimension; `chunk_hash` the chunk content that
-- was embedded and `input_hash` the full model input (header path + content),
-- so a change of either re-embeds the chunk.
--
-- HNSW needs a fixed dimension, so the index is an expression index on
-- `embedding::vector(384)`, partial on `dim = 384`. A query must use the same
-- cast and the literal `dim = 384` predicate to use it (scoring/semantic.py
-- does). A model of another dimension needs one more index of this shape in a
-- later migration. m / ef_construction are pgvector's defaults (flags.yaml
-- holds the query-time hnsw.ef_search).
create table if not exists chunk_embeddings (
    id          bigserial primary key,
    chunk_id    uuid not null references docs_knowledge_chunks (id) on delete cascade,
    model       text not null,
    dim         int  not null check (dim > 0),
    chunk_hash  text not null,
    input_hash  text not null default '',
    embedding   vector not null,
    created_at  timestamptz not null default now(),
    unique (chunk_id, model),
    check (vector_dims(embedding) = dim)
);

-- No separate index on `model`: the unique (chunk_id, model) serves the
-- indexer's lookups, and a btree on a column with one or two values only
-- tempts the planner away from HNSW on small tables.
create index if not exists chunk_embeddings_hnsw_384
    on chunk_embeddings
    using hnsw ((embedding::vector(384)) vector_cosine_ops)
    with (m = 16, ef_construction = 64)
    where dim = 384;
