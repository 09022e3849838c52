-- The corpus's self-check (issue 40 item 2; service/corpus_check.py): questions made from the
-- corpus's own sections, run through phase 3 at each corpus load, with how often the first page
-- was their page and the mean p of the fit in force. One row per run, kept: a drop after a
-- re-seed, a flag change or a new fit shows against the rows before it.
create table if not exists corpus_probes (
    id           bigserial primary key,
    corpus       text not null,                 -- calibration.corpus_fingerprint of the pages
    fit          text not null,                 -- the version of the fit whose p was measured
    kind         text not null,                 -- which probes (decide/corpus_probes.py KIND)
    probes       integer not null check (probes >= 0),
    hits         integer not null check (hits >= 0 and hits <= probes),
    mean_p       double precision not null check (mean_p >= 0 and mean_p <= 1),
    computed_at  timestamptz not null default now()
);

create index if not exists corpus_probes_computed_at on corpus_probes (computed_at desc);
