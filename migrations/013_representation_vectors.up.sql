-- Issue 19: besides each chunk's body, short representations of what a
-- section or page is about are embedded (ingest/representations.py):
--   body    - the chunk itself (every row before this migration);
--   section - the chunk's heading path and its first sentence;
--   page    - the page title and summary (on the page's first chunk).
-- The kind is part of a vector's identity, so one chunk has up to one vector
-- per (model, kind). They share the HNSW index of migration 003: a query
-- embeds once and searches every kind it asks for in the same index walk.
alter table chunk_embeddings add column if not exists kind text not null default 'body'
    check (kind in ('body', 'section', 'page'));
alter table chunk_embeddings drop constraint if exists chunk_embeddings_chunk_id_model_key;
alter table chunk_embeddings add constraint chunk_embeddings_chunk_model_kind_key unique (chunk_id, model, kind);
