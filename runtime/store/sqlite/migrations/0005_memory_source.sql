-- 0004: a memory names the chat message it was taken from and that message's speaker, so a memory
-- about a person is filed under the one who said it. Memories written before carry NULL: no source.

ALTER TABLE memories ADD COLUMN source_message_id TEXT;
ALTER TABLE memories ADD COLUMN source_speaker_id TEXT;
