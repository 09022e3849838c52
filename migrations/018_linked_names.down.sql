alter table docs_knowledge_chunks drop column if exists linked_names;
