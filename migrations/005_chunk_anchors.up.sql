-- Each chunk's heading anchor (URL fragment, GitHub style: "pin-a-command"),
-- so evidence and GET /documents can open the exact section. '' = top of page.
alter table docs_knowledge_chunks add column if not exists anchor text not null default '';
