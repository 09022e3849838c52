-- The names other sections link to a section by (`[store.$onAction](./actions.md#…)`): the
-- section explains them, and the keyword index counts them as names it defines (issue 42;
-- service/ingest/linked_names.py writes them at seed).
alter table docs_knowledge_chunks add column if not exists linked_names text[] not null default '{}';
