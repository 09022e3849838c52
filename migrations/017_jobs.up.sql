-- Long admin work as jobs (issue 42 items 5 and 6): a re-index, a re-seed and a decision
-- fit answer 202 at once and run in the background on the replica that took the request;
-- every replica reads the job here (service/job_store.py), and a restart loses none.
-- One job of a kind per corpus at a time: the runner holds a session advisory lock for
-- the job's lifetime (a process that dies loses it, and its job is then reported failed,
-- interrupted), and at most one queued or running row per kind and corpus.
create table if not exists jobs (
    id           text primary key,
    kind         text not null check (kind in ('reindex', 'seed', 'decision_fit')),
    corpus       text not null,
    state        text not null default 'queued' check (state in ('queued', 'running', 'done', 'failed')),
    actor        text not null,
    params       jsonb not null default '{}',   -- what was asked (e.g. {"full": true})
    progress     jsonb not null default '{}',   -- {"step": ..., counts}: what it is doing now
    result       jsonb,                         -- the report when done (or what a failure rejected)
    error        text,                          -- why it failed
    created_at   timestamptz not null default now(),
    started_at   timestamptz,
    finished_at  timestamptz,
    check ((state in ('done', 'failed')) = (finished_at is not null))
);

create unique index if not exists jobs_one_active on jobs (kind, corpus) where state in ('queued', 'running');
create index if not exists jobs_created_at on jobs (created_at desc);
