-- Curations (issue 22): an operator pins a page (or one of its sections) to the
-- top, or hides a page, for a normalised query. Every replica LISTENs on
-- `curations_changed` and re-reads the table; every change has an audit row.
create table if not exists curations (
    id           bigserial primary key,
    match        text not null check (match in ('exact', 'contains')),
    phrase       text not null check (phrase <> ''),   -- the normalised query (tokens joined by spaces)
    query        text not null,                        -- as the operator typed it
    action       text not null check (action in ('pin', 'hide')),
    doc_slug     text not null,
    header_path  text,                                 -- pin one section of the page
    note         text,
    created_by   text not null,
    created_at   timestamptz not null default now(),
    unique (match, phrase, action, doc_slug)
);

create table if not exists curation_audit (
    id           bigserial primary key,
    curation_id  bigint not null,
    action       text not null check (action in ('create', 'delete')),
    curation     jsonb not null,
    actor        text not null,
    at           timestamptz not null default now()
);

create index if not exists curation_audit_at on curation_audit (at desc);
