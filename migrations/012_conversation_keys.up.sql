-- The key that signs clarifications (POST /retrieve `clarification`, sent back as `reply_to`).
-- Generated once by the first replica that needs it; every replica reads the same row,
-- so any of them can verify a clarification another one issued. CLARIFICATION_KEY in
-- the environment takes precedence and leaves this table unused.
CREATE TABLE conversation_keys (
    name        text        PRIMARY KEY,
    secret      bytea       NOT NULL CHECK (octet_length(secret) >= 32),
    created_at  timestamptz NOT NULL DEFAULT now()
);
