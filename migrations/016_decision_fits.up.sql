-- The corpus's own decision fits, learned from its reviewed traffic (issue 35 item 2).
-- `fit-decisions --from-review` / `POST /admin/decision-fits` store every fit with its
-- held-out figures; at most one is active. Every replica LISTENs on
-- `decision_fits_changed` and loads the active one into its Decider. Every fit,
-- activation and restore has an audit row.
create table if not exists decision_fits (
    id          bigserial primary key,
    created_at  timestamptz not null default now(),
    version     text not null,
    source      text not null check (source in ('review')),
    model       jsonb not null,          -- the CalibrationModel (service/decide/calibration.py)
    figures     jsonb not null,          -- cases, held-out share, this fit's and the baseline's figures
    active      boolean not null default false,
    created_by  text not null,
    reason      text not null default ''  -- why it was (not) activated
);

-- At most one fit decides.
create unique index if not exists decision_fits_one_active on decision_fits (active) where active;

create table if not exists decision_fit_audit (
    id        bigserial primary key,
    fit_id    bigint references decision_fits (id) on delete set null,
    action    text not null check (action in ('fit', 'activate', 'deactivate')),
    actor     text not null,
    reason    text not null default '',
    at        timestamptz not null default now()
);

create index if not exists decision_fit_audit_at on decision_fit_audit (at desc);
