alter table docs_knowledge drop column if exists stub;
