alter table query_log drop column if exists typed;
