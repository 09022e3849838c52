drop table if exists docs_knowledge_chunks;
