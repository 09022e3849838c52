drop table if exists docs_knowledge;
-- The vector extension is left installed on purpose: it is database-wide
-- infrastructure, other objects may use it, and dropping it would invalidate
-- the type codecs of every pooled connection.
