DROP TABLE IF EXISTS conversation_keys;
