-- Phase 2: retrievable sections of each document, upserted by (doc_slug, chunk_index).
create table docs_knowledge_chunks (
    id          uuid primary key default gen_random_uuid(),
    doc_slug    text not null references docs_knowledge (slug)
                    on delete cascade on update cascade,
    category    text not null,
    title       text not null,
    header_path text not null default '',
    chunk_index integer not null check (chunk_index >= 0),
    content     text not null,
    keywords    text[] not null default '{}',
    chunk_hash  text not null,
    token_count integer not null default 0,
    created_at  timestamptz not null default now(),
    updated_at  timestamptz not null default now(),
    unique (doc_slug, chunk_index)
);

-- The unique constraint already indexes (doc_slug, chunk_index).
create index docs_knowledge_chunks_category_idx on docs_knowledge_chunks (category);
