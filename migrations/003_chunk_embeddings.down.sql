drop table if exists chunk_embeddings;
