-- Fails if documents of other categories are stored: delete them (or re-seed
-- the seed corpus) before going back to the fixed list.
alter table docs_knowledge_chunks drop column if exists anchor;
alter table docs_knowledge drop constraint if exists docs_knowledge_category_nonempty;
alter table docs_knowledge add constraint docs_knowledge_category_check
    check (category in ('concepts', 'widgets', 'actions'));
