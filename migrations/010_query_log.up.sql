-- The operator's loop (issue 22): every /retrieve and /context call, the
-- feedback users give on it and the reviews operators make of it.
-- `query_log` is written in batches off the request path
-- (service/feedback/log_writer.py) and pruned by age and row count.
create table if not exists query_log (
    request_id      text primary key,
    at              timestamptz not null,
    endpoint        text not null check (endpoint in ('retrieve', 'context')),
    query           text,                  -- null when query_log.store_text is off
    question        boolean not null,      -- "how do I…"-style (kept even without the text)
    tokens          text[] not null,
    unknown_tokens  text[] not null default '{}',
    corrections     jsonb not null default '[]',
    phase           smallint not null,
    tier            text not null,
    status          text not null,
    reason          text not null,
    confidence      double precision not null,
    keyword_matched boolean,               -- null: no keyword leg ran (cache, disabled)
    results         jsonb not null,        -- top results: slug, title, header path, chunk, score, matched terms
    options         jsonb not null default '[]',
    latency_ms      double precision not null,
    fallback_path   jsonb not null default '[]',
    conversation    jsonb                  -- conversation fields, when the request carried them
);

create index if not exists query_log_at on query_log (at);
create index if not exists query_log_status_at on query_log (status, at);

create table if not exists query_feedback (
    id              bigserial primary key,
    request_id      text not null references query_log (request_id) on delete cascade,
    verdict         text not null check (verdict in ('helpful', 'not_what_i_meant', 'wrong_page', 'missing')),
    expected_slug   text,
    comment         text,
    client_address  text not null default '',
    at              timestamptz not null default now(),
    unique (request_id, verdict)             -- one feedback per request and verdict
);

create index if not exists query_feedback_at on query_feedback (at);

-- Every review is a new row (the audit trail); the newest per request is in force.
create table if not exists query_reviews (
    id              bigserial primary key,
    request_id      text not null references query_log (request_id) on delete cascade,
    verdict         text not null check (verdict in ('right', 'wrong', 'should_be')),
    expected_slug   text,
    note            text,
    reviewer        text not null,
    at              timestamptz not null default now(),
    check (verdict <> 'should_be' or expected_slug is not null)
);

create index if not exists query_reviews_request_at on query_reviews (request_id, at desc);
create index if not exists query_reviews_at on query_reviews (at);
