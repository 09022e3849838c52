drop table if exists query_reviews;
drop table if exists query_feedback;
drop table if exists query_log;
