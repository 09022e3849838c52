-- Runtime flag overrides (PUT /admin/flags) and their audit trail.
-- Precedence: flags.yaml < environment < these overrides (< kill switch for
-- `enabled` / `phase`). `name` is a dotted flag key (e.g. `phase`,
-- `kill_switch.p95_ms`); `value` is the JSON value, validated by the service's
-- schema before it is written. Every replica LISTENs on `flags_changed`.
create table if not exists flag_overrides (
    name        text primary key,
    value       jsonb not null,
    updated_at  timestamptz not null default now(),
    updated_by  text not null default ''
);

create table if not exists flag_audit (
    id             bigserial primary key,
    name           text not null,
    old_value      jsonb,
    new_value      jsonb,
    action         text not null check (action in ('set', 'delete')),
    actor_address  text not null default '',
    at             timestamptz not null default now()
);

create index if not exists flag_audit_name_at on flag_audit (name, at desc);
