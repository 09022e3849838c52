drop table if exists curation_audit;
drop table if exists curations;
