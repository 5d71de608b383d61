-- 0002: the chats of each topic thread as rows of their own, kept by a trigger from chat_ids_json.
-- A chat's threads were found by reading every thread's chat list: linear in every thread ever made,
-- in any chat, and on the way to every addressed reply. Through this table's key, a chat's listing
-- reads that chat's threads only.

CREATE TABLE thread_chats (
    chat_id   text NOT NULL,
    thread_id text NOT NULL,
    PRIMARY KEY (chat_id, thread_id)
);
CREATE INDEX thread_chats_thread ON thread_chats (thread_id);

CREATE FUNCTION thread_chats_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        IF TG_OP = 'UPDATE' AND OLD.id = NEW.id AND OLD.chat_ids_json = NEW.chat_ids_json THEN
            RETURN NULL;
        END IF;
        DELETE FROM thread_chats WHERE thread_id = OLD.id;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO thread_chats (chat_id, thread_id)
        SELECT DISTINCT value, NEW.id FROM jsonb_array_elements_text(NEW.chat_ids_json::jsonb) AS j (value)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER thread_chats_sync AFTER INSERT OR UPDATE OR DELETE ON threads
FOR EACH ROW EXECUTE FUNCTION thread_chats_sync();

INSERT INTO thread_chats (chat_id, thread_id)
SELECT DISTINCT j.value, t.id FROM threads AS t, jsonb_array_elements_text(t.chat_ids_json::jsonb) AS j (value)
ON CONFLICT DO NOTHING;
