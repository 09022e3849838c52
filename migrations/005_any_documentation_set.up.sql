-- Any documentation set (issue 17): categories are the corpus's own (its
-- folders or front matter), so the fixed list of migration 001 goes; the
-- service validates requests against the loaded corpus instead.
alter table docs_knowledge drop constraint if exists docs_knowledge_category_check;
alter table docs_knowledge add constraint docs_knowledge_category_nonempty check (category <> '');

-- Each chunk's heading anchor (URL fragment, GitHub style: "pin-a-command"),
-- so evidence and GET /documents can open the exact section. '' = top of page.
alter table docs_knowledge_chunks add column if not exists anchor text not null default '';
