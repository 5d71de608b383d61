-- 0002: design/001's memory layer (summaries, token ledger, user profiles), episodes and tool calls,
-- and archived session transcripts.

CREATE TABLE memory_summaries (
    conversation              TEXT PRIMARY KEY,
    version                   INTEGER NOT NULL,
    summary_json              TEXT    NOT NULL,
    rounds_processed          INTEGER NOT NULL,
    rounds_since_compression  INTEGER NOT NULL,
    tokens_since_compression  INTEGER NOT NULL,
    last_compressed_at        REAL,
    updated_at                REAL    NOT NULL,
    injection_log_json        TEXT    NOT NULL
);

CREATE TABLE token_usage (
    chat_id            TEXT    NOT NULL,
    day                TEXT    NOT NULL,   -- YYYY-MM-DD
    prompt_tokens      INTEGER NOT NULL,
    completion_tokens  INTEGER NOT NULL,
    calls              INTEGER NOT NULL,
    PRIMARY KEY (chat_id, day)
);

CREATE TABLE user_profiles (
    user_id           TEXT PRIMARY KEY,
    nickname          TEXT NOT NULL,
    preferences_json  TEXT NOT NULL,
    relationship      TEXT NOT NULL,
    updated_at        REAL NOT NULL,
    extra_json        TEXT NOT NULL
);

CREATE TABLE episodes (
    id               TEXT PRIMARY KEY,
    chat_id          TEXT NOT NULL,
    event_id         TEXT,
    thread_id        TEXT,
    topic_thread_id  TEXT,
    session_id       TEXT,
    state            TEXT NOT NULL,
    started_at       REAL NOT NULL,
    ended_at         REAL,
    outcome          TEXT
);
CREATE INDEX episodes_chat ON episodes (chat_id, started_at);

CREATE TABLE episode_steps (
    episode_id    TEXT    NOT NULL,
    idx           INTEGER NOT NULL,
    kind          TEXT    NOT NULL,
    at            REAL    NOT NULL,
    payload_json  TEXT    NOT NULL,
    PRIMARY KEY (episode_id, idx)
);

CREATE TABLE tool_calls (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    episode_id      TEXT,
    tool            TEXT NOT NULL,
    chat_id         TEXT NOT NULL,
    arguments_json  TEXT NOT NULL,
    status          TEXT NOT NULL,
    result          TEXT,
    error           TEXT,
    started_at      REAL NOT NULL,
    ended_at        REAL
);
CREATE INDEX tool_calls_episode ON tool_calls (episode_id);
CREATE INDEX tool_calls_chat ON tool_calls (chat_id, started_at);

CREATE TABLE transcripts (
    session_id  TEXT PRIMARY KEY,
    thread_id   TEXT NOT NULL,
    chat_id     TEXT NOT NULL,
    content     TEXT NOT NULL,
    fmt         TEXT NOT NULL,
    created_at  REAL NOT NULL
);
