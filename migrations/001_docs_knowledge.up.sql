-- Phase 0: one row per documentation page (seeds/<category>/<name>.md).
create extension if not exists vector;

create table docs_knowledge (
    id           bigserial primary key,
    slug         text not null unique,
    category     text not null check (category in ('concepts', 'widgets', 'actions')),
    title        text not null,
    summary      text not null default '',
    content      text not null,
    keywords     text[] not null default '{}',
    content_hash text not null,
    version      integer not null default 1 check (version >= 1),
    created_at   timestamptz not null default now(),
    updated_at   timestamptz not null default now()
);

create index docs_knowledge_category_idx on docs_knowledge (category);
