-- 0006: the chats of each topic thread as rows of their own, kept by triggers from chat_ids_json.
-- A chat's threads were found by reading every thread's chat list (json_each on each row): linear
-- in every thread ever made, in any chat, and on the way to every addressed reply (the resolver
-- lists the chat's live threads each turn). Through this table's key, a chat's listing reads that
-- chat's threads only. A chat list that is not JSON names no chat (it was never listed by any).

CREATE TABLE thread_chats (
    chat_id   TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    PRIMARY KEY (chat_id, thread_id)
) WITHOUT ROWID;
CREATE INDEX thread_chats_thread ON thread_chats (thread_id);

CREATE TRIGGER thread_chats_insert AFTER INSERT ON threads BEGIN
    INSERT OR IGNORE INTO thread_chats (chat_id, thread_id)
    SELECT value, new.id FROM json_each(iif(json_valid(new.chat_ids_json), new.chat_ids_json, '[]'))
    WHERE type = 'text';
END;
CREATE TRIGGER thread_chats_update AFTER UPDATE OF id, chat_ids_json ON threads
WHEN old.id IS NOT new.id OR old.chat_ids_json IS NOT new.chat_ids_json BEGIN
    DELETE FROM thread_chats WHERE thread_id = old.id;
    INSERT OR IGNORE INTO thread_chats (chat_id, thread_id)
    SELECT value, new.id FROM json_each(iif(json_valid(new.chat_ids_json), new.chat_ids_json, '[]'))
    WHERE type = 'text';
END;
CREATE TRIGGER thread_chats_delete AFTER DELETE ON threads BEGIN
    DELETE FROM thread_chats WHERE thread_id = old.id;
END;

INSERT OR IGNORE INTO thread_chats (chat_id, thread_id)
SELECT j.value, t.id FROM threads AS t, json_each(iif(json_valid(t.chat_ids_json), t.chat_ids_json, '[]')) AS j
WHERE j.type = 'text';
