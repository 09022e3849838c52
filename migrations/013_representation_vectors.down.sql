delete from chunk_embeddings where kind <> 'body';
alter table chunk_embeddings drop constraint if exists chunk_embeddings_chunk_model_kind_key;
alter table chunk_embeddings add constraint chunk_embeddings_chunk_id_model_key unique (chunk_id, model);
alter table chunk_embeddings drop column if exists kind;
