-- 0003: the chat id joins the messages' full-text index, so a search inside a few chats intersects
-- posting lists inside FTS5 instead of scoring every match in every chat and filtering afterwards.
-- ':' is a token character, so "group:1" is one token (words and chars never contain ':').

DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
DROP TABLE messages_fts;

CREATE VIRTUAL TABLE messages_fts USING fts5(
    words, chars, chat_id, content='messages', content_rowid='seq', tokenize="unicode61 tokenchars ':'"
);
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

INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
