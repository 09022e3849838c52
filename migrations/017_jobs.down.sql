drop table if exists jobs;
