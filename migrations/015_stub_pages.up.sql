-- Pages with nothing to say on their own (issue 33): only an include line, a
-- directive, a list of links, properties or components. They stay for links and
-- GET /documents, marked, and are never the answer on their own
-- (service/ingest/dialects.py decides; the decision reads it from the indexes).
alter table docs_knowledge add column if not exists stub boolean not null default false;
