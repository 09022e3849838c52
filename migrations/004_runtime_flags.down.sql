drop table if exists flag_audit;
drop table if exists flag_overrides;
