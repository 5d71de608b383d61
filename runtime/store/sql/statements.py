"""The statements both SQL backends run, written with SQLite's ``?`` placeholders.

PostgreSQL's base numbers the placeholders ``$1, $2...`` as each statement runs
(:func:`runtime.store.postgres.base.pg`), so one text serves both dialects wherever they read SQL
the same way: ``INSERT ... ON CONFLICT ... DO UPDATE``, ``TRUE``, window functions, a named subquery.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from runtime.store.protocol import MemoryScope
from runtime.store.sql import rows as r_


def placeholders(values: Collection[object]) -> str:
    return ", ".join("?" * len(values))


def upsert_sql(table: str, columns: str, key: str) -> str:
    """``INSERT ... ON CONFLICT(key) DO UPDATE`` replacing every non-key column (rowids stay stable)."""
    cols = [c.strip() for c in columns.split(",")]
    keys = {k.strip() for k in key.split(",")}
    updates = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in keys)
    return (
        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({placeholders(cols)}) "
        f"ON CONFLICT ({key}) DO UPDATE SET {updates}"
    )


def limit_sql(limit: int | None) -> str:
    """`` LIMIT n`` (never negative), or nothing for no limit."""
    return "" if limit is None else f" LIMIT {max(int(limit), 0)}"


def scope_clause(scopes: Collection[MemoryScope]) -> tuple[str, list[Any]]:
    """``(m.scope_type = ? AND m.scope_id = ?) OR ...`` for the allowed scopes."""
    pairs = sorted({(str(kind), ident) for kind, ident in scopes})
    clause = " OR ".join("(m.scope_type = ? AND m.scope_id = ?)" for _ in pairs)
    return f"({clause})", [v for pair in pairs for v in pair]


# -- the context tables (design/000) ---------------------------------------------------------------

THREAD_UPSERT = upsert_sql("threads", r_.THREAD_COLUMNS, "id")
SESSION_UPSERT = upsert_sql("sessions", r_.SESSION_COLUMNS, "id")
TRANSCRIPT_UPSERT = upsert_sql("transcripts", r_.TRANSCRIPT_COLUMNS, "session_id")
HANDOFF_UPSERT = upsert_sql("handoffs", r_.HANDOFF_COLUMNS, "id")
TASK_UPSERT = upsert_sql("tasks", r_.TASK_COLUMNS, "id")
MEMORY_UPSERT = upsert_sql(
    "memories",
    "id, scope_type, scope_id, memory_type, content, importance, tags_json, created_at, updated_at, "
    "extra_json, words, chars, source_message_id, source_speaker_id",
    "id",
)
VECTOR_UPSERT = upsert_sql("memory_vectors", "memory_id, model, data", "memory_id")
VECTOR_DELETE = "DELETE FROM memory_vectors WHERE memory_id = ?"

# -- the memory layer (design/001), episodes and tool calls ----------------------------------------

SUMMARY_UPSERT = upsert_sql("memory_summaries", r_.SUMMARY_COLUMNS, "conversation")
PROFILE_UPSERT = upsert_sql("user_profiles", r_.PROFILE_COLUMNS, "user_id")
EPISODE_UPSERT = upsert_sql("episodes", r_.EPISODE_COLUMNS, "id")
STEPS_DELETE = "DELETE FROM episode_steps WHERE episode_id = ?"
STEP_UPSERT = upsert_sql("episode_steps", "episode_id, idx, kind, at, payload_json", "episode_id, idx")
TOOL_CALL_UPSERT = upsert_sql("tool_calls", r_.TOOL_CALL_COLUMNS, "id")
USAGE_ADD = (
    "INSERT INTO token_usage AS u (chat_id, day, prompt_tokens, completion_tokens, calls) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (chat_id, day) DO UPDATE SET "
    "prompt_tokens = u.prompt_tokens + excluded.prompt_tokens, "
    "completion_tokens = u.completion_tokens + excluded.completion_tokens, "
    "calls = u.calls + excluded.calls "
    "RETURNING chat_id, day, prompt_tokens, completion_tokens, calls"
)

# -- the log: messages, events, activations, speeches, lexicon terms -------------------------------

# By platform id: the most recent message with that id.
LATEST_WITH_ID = (
    "SELECT seq FROM messages WHERE chat_id = ? AND message_id = ? ORDER BY time DESC, seq DESC LIMIT 1"
)
M_COLUMNS = ", ".join(f"m.{c.strip()}" for c in r_.MESSAGE_COLUMNS.split(","))
RECALL = f"UPDATE messages SET recalled = 1 WHERE seq = ({LATEST_WITH_ID})"
LINK = f"UPDATE messages SET topic_thread_id = ? WHERE seq = ({LATEST_WITH_ID})"
EVENT_UPSERT = upsert_sql("events", r_.EVENT_COLUMNS, "id")
ACTIVATION_UPSERT = upsert_sql("scheduled_activations", r_.ACTIVATION_COLUMNS, "event_id")
ACTIVATION_DELETE = "DELETE FROM scheduled_activations WHERE event_id = ?"
SPEECH_INSERT = "INSERT INTO speech_log (chat_id, time, forced) VALUES (?, ?, ?)"
TERM_UPSERT = upsert_sql("lexicon_terms", r_.TERM_COLUMNS, "scope, owner, term")
