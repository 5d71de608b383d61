-- 0004: a platform message id no longer names one message. OneBot implementations derive their int32
-- ids from hashes or restart their counters, so over a long history ids repeat inside a chat; the
-- UNIQUE (chat_id, message_id) made a later message replace an older one. A message is now its own
-- row (its seq); the store recognises a repeated *delivery* of one message by its identity (same id,
-- sender and text, close in time: runtime.store.records.same_delivery) and keeps it once.
-- SQLite cannot drop a constraint: the table is rebuilt, keeping every seq (the FTS index's rowids).

DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
ALTER TABLE messages RENAME TO messages_0003;

CREATE TABLE messages (
    seq             INTEGER PRIMARY KEY,       -- stable rowid: the FTS index points at it
    chat_id         TEXT    NOT NULL,
    message_id      TEXT    NOT NULL,          -- the platform's id: may repeat in a chat over time
    sender_id       TEXT    NOT NULL,
    sender_name     TEXT    NOT NULL,
    time            REAL    NOT NULL,
    text            TEXT    NOT NULL,
    thread_id       TEXT,
    topic_thread_id TEXT,
    from_self       INTEGER NOT NULL DEFAULT 0,
    recalled        INTEGER NOT NULL DEFAULT 0,
    reply_to        TEXT,
    mentions_json   TEXT    NOT NULL DEFAULT '[]',
    addressed       INTEGER NOT NULL DEFAULT 0,
    words           TEXT    NOT NULL DEFAULT '',
    chars           TEXT    NOT NULL DEFAULT ''
);
INSERT INTO messages SELECT * FROM messages_0003;
DROP TABLE messages_0003;

CREATE INDEX messages_chat_message ON messages (chat_id, message_id, time);
CREATE INDEX messages_chat_time ON messages (chat_id, time);
CREATE INDEX messages_thread_time ON messages (thread_id, time) WHERE thread_id IS NOT NULL;
CREATE INDEX messages_topic_time ON messages (topic_thread_id, time) WHERE topic_thread_id IS NOT NULL;
CREATE INDEX messages_time ON messages (time);

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, words, chars, chat_id)
    VALUES (new.seq, new.words, new.chars, new.chat_id);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, words, chars, chat_id)
    VALUES ('delete', old.seq, old.words, old.chars, old.chat_id);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF words, chars, chat_id ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, words, chars, chat_id)
    VALUES ('delete', old.seq, old.words, old.chars, old.chat_id);
    INSERT INTO messages_fts (rowid, words, chars, chat_id) VALUES (new.seq, new.words, new.chars, new.chat_id);
END;
