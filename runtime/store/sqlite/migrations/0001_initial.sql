-- 0001: messages with their full-text index, kernel state, and design/000's context tables.
-- Times are REAL seconds since the epoch; lists and objects are JSON text.

CREATE TABLE messages (
    seq             INTEGER PRIMARY KEY,       -- stable rowid: the FTS index points at it
    chat_id         TEXT    NOT NULL,
    message_id      TEXT    NOT NULL,
    sender_id       TEXT    NOT NULL,
    sender_name     TEXT    NOT NULL,
    time            REAL    NOT NULL,
    text            TEXT    NOT NULL,
    thread_id       TEXT,                      -- the kernel's conversation thread
    topic_thread_id TEXT,                      -- the context runtime's topic thread
    from_self       INTEGER NOT NULL DEFAULT 0,
    recalled        INTEGER NOT NULL DEFAULT 0,
    reply_to        TEXT,
    mentions_json   TEXT    NOT NULL DEFAULT '[]',
    addressed       INTEGER NOT NULL DEFAULT 0,
    words           TEXT    NOT NULL DEFAULT '',   -- jieba cut_for_search tokens
    chars           TEXT    NOT NULL DEFAULT '',   -- one token per CJK character, ASCII words
    UNIQUE (chat_id, message_id)
);
CREATE INDEX messages_chat_time ON messages (chat_id, time);
CREATE INDEX messages_thread_time ON messages (thread_id, time) WHERE thread_id IS NOT NULL;
CREATE INDEX messages_topic_time ON messages (topic_thread_id, time) WHERE topic_thread_id IS NOT NULL;
CREATE INDEX messages_time ON messages (time);

CREATE VIRTUAL TABLE messages_fts USING fts5(
    words, chars, content='messages', content_rowid='seq', tokenize='unicode61'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, words, chars) VALUES (new.seq, new.words, new.chars);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, words, chars)
    VALUES ('delete', old.seq, old.words, old.chars);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF words, chars ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, words, chars)
    VALUES ('delete', old.seq, old.words, old.chars);
    INSERT INTO messages_fts (rowid, words, chars) VALUES (new.seq, new.words, new.chars);
END;

CREATE TABLE events (
    id                   TEXT PRIMARY KEY,
    kind                 TEXT NOT NULL,
    chat_id              TEXT NOT NULL,
    thread_id            TEXT,
    actor_ids_json       TEXT NOT NULL,
    evidence_json        TEXT NOT NULL,
    created_at           REAL NOT NULL,
    updated_at           REAL NOT NULL,
    not_before           REAL NOT NULL,
    deadline             REAL,
    priority             REAL NOT NULL,
    state                TEXT NOT NULL,
    payload_json         TEXT NOT NULL
);
CREATE INDEX events_state ON events (state, updated_at);

CREATE TABLE scheduled_activations (
    event_id    TEXT PRIMARY KEY,
    chat_id     TEXT NOT NULL,
    not_before  REAL NOT NULL,
    deadline    REAL,
    priority    REAL NOT NULL,
    created_at  REAL NOT NULL
);

CREATE TABLE speech_log (
    seq      INTEGER PRIMARY KEY,
    chat_id  TEXT    NOT NULL,
    time     REAL    NOT NULL,
    forced   INTEGER NOT NULL
);
CREATE INDEX speech_log_chat_time ON speech_log (chat_id, time);
CREATE INDEX speech_log_time ON speech_log (time);

CREATE TABLE lexicon_terms (
    scope       TEXT    NOT NULL,
    owner       TEXT    NOT NULL,
    term        TEXT    NOT NULL,
    weight      REAL    NOT NULL,
    pinned      INTEGER NOT NULL,
    suppressed  INTEGER NOT NULL,
    source      TEXT    NOT NULL,
    hits        INTEGER NOT NULL,
    created_at  REAL    NOT NULL,
    updated_at  REAL    NOT NULL,
    expires_at  REAL,
    extra_json  TEXT    NOT NULL,
    PRIMARY KEY (scope, owner, term)
);

CREATE TABLE threads (
    id            TEXT PRIMARY KEY,
    title         TEXT NOT NULL,
    type          TEXT NOT NULL,
    summary       TEXT NOT NULL,
    vision_json   TEXT NOT NULL,
    tags_json     TEXT NOT NULL,
    chat_ids_json TEXT NOT NULL,
    status        TEXT NOT NULL,
    created_at    REAL NOT NULL,
    updated_at    REAL NOT NULL,
    extra_json    TEXT NOT NULL
);
CREATE INDEX threads_updated ON threads (updated_at);

CREATE TABLE sessions (
    id                   TEXT PRIMARY KEY,
    thread_id            TEXT NOT NULL,
    chat_id              TEXT NOT NULL,
    state                TEXT NOT NULL,
    recent_dialogue_json TEXT NOT NULL,
    recent_actions_json  TEXT NOT NULL,
    screen_context_json  TEXT NOT NULL,
    interruptions_json   TEXT NOT NULL,
    resume_point         TEXT,
    started_at           REAL NOT NULL,
    updated_at           REAL NOT NULL,
    ended_at             REAL,
    extra_json           TEXT NOT NULL
);
CREATE INDEX sessions_thread ON sessions (thread_id, updated_at);
CREATE INDEX sessions_state ON sessions (state);

CREATE TABLE handoffs (
    seq                   INTEGER PRIMARY KEY,
    id                    TEXT NOT NULL UNIQUE,
    from_session_id       TEXT NOT NULL,
    to_session_id         TEXT,
    thread_id             TEXT NOT NULL,
    summary               TEXT NOT NULL,
    unfinished_items_json TEXT NOT NULL,
    risks_json            TEXT NOT NULL,
    resume_suggestion     TEXT NOT NULL,
    written_by            TEXT NOT NULL,
    created_at            REAL NOT NULL
);
CREATE INDEX handoffs_thread ON handoffs (thread_id, created_at);

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    thread_id   TEXT NOT NULL,
    title       TEXT NOT NULL,
    status      TEXT NOT NULL,
    conclusion  TEXT,
    tags_json   TEXT NOT NULL,
    created_at  REAL NOT NULL,
    updated_at  REAL NOT NULL,
    extra_json  TEXT NOT NULL
);
CREATE INDEX tasks_thread ON tasks (thread_id, updated_at);

CREATE TABLE memories (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    scope_type   TEXT    NOT NULL,   -- identity | chat | thread | task | sop | user
    scope_id     TEXT    NOT NULL,
    memory_type  TEXT    NOT NULL,
    content      TEXT    NOT NULL,
    importance   REAL    NOT NULL,
    tags_json    TEXT    NOT NULL,
    created_at   REAL    NOT NULL,
    updated_at   REAL    NOT NULL,
    extra_json   TEXT    NOT NULL,
    words        TEXT    NOT NULL DEFAULT '',
    chars        TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX memories_scope ON memories (scope_type, scope_id, created_at);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    words, chars, content='memories', content_rowid='seq', tokenize='unicode61'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, words, chars) VALUES (new.seq, new.words, new.chars);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, words, chars)
    VALUES ('delete', old.seq, old.words, old.chars);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF words, chars ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, words, chars)
    VALUES ('delete', old.seq, old.words, old.chars);
    INSERT INTO memories_fts (rowid, words, chars) VALUES (new.seq, new.words, new.chars);
END;

CREATE TABLE memory_vectors (
    memory_id  TEXT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
    model      TEXT,
    data       BLOB NOT NULL
);
