drop table if exists corpus_probes;
