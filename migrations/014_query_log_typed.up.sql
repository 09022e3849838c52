-- What the user typed beside what was searched (issue 35): the conversation stage may
-- search another text than the message (a carried topic, the question a reply answers),
-- and the review queue shows both. Null for rows logged before, and with
-- query_log.store_text off.
alter table query_log add column if not exists typed text;
