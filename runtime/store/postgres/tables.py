"""The tables of design/000 and design/001 on PostgreSQL: topic threads, sessions, transcripts,
handoffs, tasks, memories (full-text searched like the messages, :mod:`runtime.store.postgres.search`),
summaries, the token ledger, user profiles, episodes and tool calls.

The statements are the SQLite backend's where the dialects agree (the column lists and upserts of
:mod:`runtime.store.sqlite.rows`); JSON lists are read with ``jsonb_array_elements_text``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import asyncpg

from runtime.store.postgres.base import PostgresBase, cleaned, pg
from runtime.store.postgres.search import text_match, vectors
from runtime.store.protocol import MemoryScope
from runtime.store.records import (
    EpisodeRecord,
    EpisodeStep,
    Handoff,
    Memory,
    MemoryHit,
    MemorySummary,
    MemoryVector,
    ScopeType,
    Session,
    SessionState,
    Task,
    TaskStatus,
    TokenUsage,
    ToolCallRecord,
    TopicThread,
    TopicThreadStatus,
    TranscriptArchive,
    UserProfile,
)
from runtime.store.sqlite import rows as r_
from runtime.store.sqlite.base import placeholders, upsert_sql
from runtime.store.text import index_text, parse_query

_THREAD_UPSERT = pg(upsert_sql("threads", r_.THREAD_COLUMNS, "id"))
_SESSION_UPSERT = pg(upsert_sql("sessions", r_.SESSION_COLUMNS, "id"))
_TRANSCRIPT_UPSERT = pg(upsert_sql("transcripts", r_.TRANSCRIPT_COLUMNS, "session_id"))
_HANDOFF_UPSERT = pg(upsert_sql("handoffs", r_.HANDOFF_COLUMNS, "id"))
_TASK_UPSERT = pg(upsert_sql("tasks", r_.TASK_COLUMNS, "id"))
_MEMORY_UPSERT = pg(
    upsert_sql(
        "memories",
        "id, scope_type, scope_id, memory_type, content, importance, tags_json, created_at, updated_at, "
        "extra_json, words, chars, source_message_id, source_speaker_id",
        "id",
    )
)
_VECTOR_UPSERT = pg(upsert_sql("memory_vectors", "memory_id, model, data", "memory_id"))


_SUMMARY_UPSERT = pg(upsert_sql("memory_summaries", r_.SUMMARY_COLUMNS, "conversation"))
_PROFILE_UPSERT = pg(upsert_sql("user_profiles", r_.PROFILE_COLUMNS, "user_id"))
_EPISODE_UPSERT = pg(upsert_sql("episodes", r_.EPISODE_COLUMNS, "id"))
_STEP_UPSERT = pg(upsert_sql("episode_steps", "episode_id, idx, kind, at, payload_json", "episode_id, idx"))
TOOL_CALL_UPSERT = pg(upsert_sql("tool_calls", r_.TOOL_CALL_COLUMNS, "id"))
_USAGE_ADD = (
    "INSERT INTO token_usage AS u (chat_id, day, prompt_tokens, completion_tokens, calls) "
    "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (chat_id, day) DO UPDATE SET "
    "prompt_tokens = u.prompt_tokens + excluded.prompt_tokens, "
    "completion_tokens = u.completion_tokens + excluded.completion_tokens, "
    "calls = u.calls + excluded.calls "
    "RETURNING chat_id, day, prompt_tokens, completion_tokens, calls"
)


def _limit(limit: int | None) -> str:
    return "" if limit is None else f" LIMIT {max(int(limit), 0)}"


def _scope_clause(scopes: Collection[MemoryScope]) -> tuple[str, list[Any]]:
    """``(m.scope_type = ? AND m.scope_id = ?) OR ...`` for the allowed scopes."""
    pairs = sorted({(str(kind), ident) for kind, ident in scopes})
    clause = " OR ".join("(m.scope_type = ? AND m.scope_id = ?)" for _ in pairs)
    return f"({clause})", [v for pair in pairs for v in pair]


class ContextTables(PostgresBase):
    # -- topic threads --------------------------------------------------------------------------

    async def upsert_topic_thread(self, thread: TopicThread) -> None:
        await self._execute("upsert_topic_thread", _THREAD_UPSERT, r_.thread_row(thread))

    async def get_topic_thread(self, thread_id: str) -> TopicThread | None:
        row = await self._one(f"SELECT {r_.THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,))
        return r_.thread_from_row(row) if row else None

    async def list_topic_threads(
        self,
        *,
        statuses: Collection[TopicThreadStatus] | None = None,
        chat_id: str | None = None,
        limit: int | None = None,
    ) -> list[TopicThread]:
        where, params = ["TRUE"], []
        source = "threads"
        if chat_id is not None:
            # The chat's rows of thread_chats (kept by a trigger): its threads only, not every thread's
            # chat list.
            source = "thread_chats AS c JOIN threads ON threads.id = c.thread_id"
            where.append("c.chat_id = ?")
            params.append(chat_id)
        if statuses is not None:
            where.append(f"status IN ({placeholders(statuses)})")
            params += [str(s) for s in statuses]
        sql = (
            f"SELECT {r_.THREAD_COLUMNS} FROM {source} WHERE {' AND '.join(where)} "
            f"ORDER BY updated_at DESC, threads.id DESC{_limit(limit)}"
        )
        return [r_.thread_from_row(r) for r in await self._rows(sql, params)]

    # -- sessions and transcripts ---------------------------------------------------------------

    async def upsert_session(self, session: Session) -> None:
        await self._execute("upsert_session", _SESSION_UPSERT, r_.session_row(session))

    async def get_session(self, session_id: str) -> Session | None:
        row = await self._one(f"SELECT {r_.SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
        return r_.session_from_row(row) if row else None

    async def list_sessions(
        self,
        *,
        topic_thread_id: str | None = None,
        chat_id: str | None = None,
        states: Collection[SessionState] | None = None,
        limit: int | None = None,
    ) -> list[Session]:
        where, params = ["TRUE"], []
        if topic_thread_id is not None:
            where.append("thread_id = ?")
            params.append(topic_thread_id)
        if chat_id is not None:
            where.append("chat_id = ?")
            params.append(chat_id)
        if states is not None:
            where.append(f"state IN ({placeholders(states)})")
            params += [str(s) for s in states]
        sql = (
            f"SELECT {r_.SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(where)} "
            f"ORDER BY updated_at DESC, id DESC{_limit(limit)}"
        )
        return [r_.session_from_row(r) for r in await self._rows(sql, params)]

    async def save_transcript(self, archive: TranscriptArchive) -> None:
        await self._execute("save_transcript", _TRANSCRIPT_UPSERT, r_.transcript_row(archive))

    async def get_transcript(self, session_id: str) -> TranscriptArchive | None:
        row = await self._one(
            f"SELECT {r_.TRANSCRIPT_COLUMNS} FROM transcripts WHERE session_id = ?", (session_id,)
        )
        return r_.transcript_from_row(row) if row else None

    # -- handoffs ------------------------------------------------------------------------------

    async def save_handoff(self, handoff: Handoff) -> None:
        await self._execute("save_handoff", _HANDOFF_UPSERT, r_.handoff_row(handoff))

    async def get_handoff(self, handoff_id: str) -> Handoff | None:
        row = await self._one(f"SELECT {r_.HANDOFF_COLUMNS} FROM handoffs WHERE id = ?", (handoff_id,))
        return r_.handoff_from_row(row) if row else None

    async def list_handoffs(self, topic_thread_id: str, *, limit: int = 10) -> list[Handoff]:
        rows = await self._rows(
            f"SELECT {r_.HANDOFF_COLUMNS} FROM handoffs WHERE thread_id = ? "
            f"ORDER BY created_at DESC, seq DESC{_limit(limit)}",
            (topic_thread_id,),
        )
        return [r_.handoff_from_row(r) for r in rows]

    async def latest_handoff(self, topic_thread_id: str) -> Handoff | None:
        found = await self.list_handoffs(topic_thread_id, limit=1)
        return found[0] if found else None

    # -- tasks -----------------------------------------------------------------------------------

    async def upsert_task(self, task: Task) -> None:
        await self._execute("upsert_task", _TASK_UPSERT, r_.task_row(task))

    async def get_task(self, task_id: str) -> Task | None:
        row = await self._one(f"SELECT {r_.TASK_COLUMNS} FROM tasks WHERE id = ?", (task_id,))
        return r_.task_from_row(row) if row else None

    async def list_tasks(
        self,
        *,
        topic_thread_id: str | None = None,
        statuses: Collection[TaskStatus] | None = None,
        limit: int | None = None,
    ) -> list[Task]:
        where, params = ["TRUE"], []
        if topic_thread_id is not None:
            where.append("thread_id = ?")
            params.append(topic_thread_id)
        if statuses is not None:
            where.append(f"status IN ({placeholders(statuses)})")
            params += [str(s) for s in statuses]
        sql = (
            f"SELECT {r_.TASK_COLUMNS} FROM tasks WHERE {' AND '.join(where)} "
            f"ORDER BY updated_at DESC, id DESC{_limit(limit)}"
        )
        return [r_.task_from_row(r) for r in await self._rows(sql, params)]

    # -- memories ----------------------------------------------------------------------------------

    async def upsert_memory(self, memory: Memory) -> None:
        indexed = await asyncio.to_thread(index_text, memory.content)

        words, chars = vectors(indexed)
        row = r_.memory_row(memory, indexed)
        row = (*row[:10], words, chars, *row[12:])

        async def body(db: asyncpg.Connection) -> None:
            await db.execute(_MEMORY_UPSERT, *cleaned(row))
            if memory.embedding is None:
                await db.execute(pg("DELETE FROM memory_vectors WHERE memory_id = ?"), memory.id)
            else:
                await db.execute(_VECTOR_UPSERT, memory.id, memory.embedding_model, memory.embedding)

        await self._tx("upsert_memory", body)

    async def get_memory(self, memory_id: str) -> Memory | None:
        row = await self._one(
            f"SELECT {r_.MEMORY_COLUMNS} FROM {r_.MEMORY_FROM} WHERE m.id = ?", (memory_id,)
        )
        return r_.memory_from_row(row) if row else None

    async def delete_memory(self, memory_id: str) -> bool:
        return await self._execute("delete_memory", "DELETE FROM memories WHERE id = ?", (memory_id,)) > 0

    async def list_memories(
        self,
        *,
        scopes: Collection[MemoryScope],
        memory_types: Collection[str] | None = None,
        tags: Collection[str] | None = None,
        since: float | None = None,
        min_importance: float | None = None,
        limit: int | None = None,
    ) -> list[Memory]:
        self._check()
        if not scopes:
            return []
        clause, params = _scope_clause(scopes)
        where = [clause]
        if memory_types is not None:
            where.append(f"m.memory_type IN ({placeholders(memory_types)})")
            params += list(memory_types)
        if tags is not None:
            where.append(
                f"EXISTS (SELECT 1 FROM jsonb_array_elements_text(m.tags_json::jsonb) AS j (value) "
                f"WHERE value IN ({placeholders(tags)}))"
            )
            params += list(tags)
        if since is not None:
            where.append("m.created_at >= ?")
            params.append(since)
        if min_importance is not None:
            where.append("m.importance >= ?")
            params.append(min_importance)
        sql = (
            f"SELECT {r_.MEMORY_COLUMNS} FROM {r_.MEMORY_FROM} WHERE {' AND '.join(where)} "
            f"ORDER BY m.created_at DESC, m.id DESC{_limit(limit)}"
        )
        return [r_.memory_from_row(r) for r in await self._rows(sql, params)]

    async def search_memories(
        self, query: str, *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[MemoryHit]:
        self._check()
        parsed = parse_query(query)
        if parsed.empty or not scopes or limit <= 0:
            return []
        clause, values = _scope_clause(scopes)
        match, rank = text_match("m", parsed)
        sql = (
            f"SELECT {r_.MEMORY_COLUMNS}, {rank} AS rank FROM {r_.MEMORY_FROM} "
            f"WHERE ({match}) AND {clause} "
            f"ORDER BY rank DESC, m.importance DESC, m.id LIMIT {int(limit)}"
        )
        found = await self._rows(sql, values)
        return [MemoryHit(r_.memory_from_row(r), float(r[-1])) for r in found]

    async def search_memories_each(
        self, queries: Sequence[str], *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[list[MemoryHit]]:
        # One branch per query, each search_memories' own statement (its order and limit) numbered
        # by the query; the outer order repeats each branch's, so every query's hits come in order.
        self._check()
        each: list[list[MemoryHit]] = [[] for _ in queries]
        if not scopes or limit <= 0:
            return each
        clause, scope_values = _scope_clause(scopes)
        branches: list[str] = []
        values: list[Any] = []
        for index, query in enumerate(queries):
            parsed = parse_query(query)
            if parsed.empty:
                continue
            match, rank = text_match("m", parsed)
            branches.append(
                f"(SELECT {r_.MEMORY_COLUMNS}, {rank} AS rank, {index} AS query_index "
                f"FROM {r_.MEMORY_FROM} WHERE ({match}) AND {clause} "
                f"ORDER BY rank DESC, m.importance DESC, m.id LIMIT {int(limit)})"
            )
            values += scope_values
        if not branches:
            return each
        sql = (
            f"SELECT * FROM ({' UNION ALL '.join(branches)}) AS found "
            "ORDER BY query_index, rank DESC, importance DESC, id"
        )
        for r in await self._rows(sql, values):
            each[int(r[-1])].append(MemoryHit(r_.memory_from_row(r), float(r[-2])))
        return each

    async def save_memory_vector(self, memory_id: str, data: bytes, *, model: str | None = None) -> None:
        await self._execute(
            "save_memory_vector",
            "INSERT INTO memory_vectors (memory_id, model, data) "
            "SELECT ?::text, ?::text, ?::bytea WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?) "
            "ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, data = excluded.data",
            (memory_id, model, data, memory_id),
        )

    async def load_memory_vectors(
        self, *, scopes: Collection[MemoryScope], model: str | None = None
    ) -> list[MemoryVector]:
        self._check()
        if not scopes:
            return []
        clause, params = _scope_clause(scopes)
        model_clause = ""
        if model is not None:
            model_clause = " AND v.model = ?"
            params.append(model)
        rows = await self._rows(
            "SELECT m.id, m.scope_type, m.scope_id, v.model, v.data FROM memories AS m "
            f"JOIN memory_vectors AS v ON v.memory_id = m.id WHERE {clause}{model_clause} ORDER BY m.id",
            params,
        )
        return [MemoryVector(r[0], ScopeType(r[1]), r[2], r[3], bytes(r[4])) for r in rows]

    async def count_memories(self) -> int:
        row = await self._one("SELECT COUNT(*) FROM memories")
        return int(row[0]) if row else 0


class LayerTables(PostgresBase):
    # -- memory summaries ---------------------------------------------------------------------

    async def upsert_memory_summary(self, summary: MemorySummary) -> None:
        await self._execute("upsert_memory_summary", _SUMMARY_UPSERT, r_.summary_row(summary))

    async def get_memory_summary(self, conversation: str) -> MemorySummary | None:
        row = await self._one(
            f"SELECT {r_.SUMMARY_COLUMNS} FROM memory_summaries WHERE conversation = ?", (conversation,)
        )
        return r_.summary_from_row(row) if row else None

    async def list_memory_summaries(self) -> list[MemorySummary]:
        rows = await self._rows(f"SELECT {r_.SUMMARY_COLUMNS} FROM memory_summaries ORDER BY conversation")
        return [r_.summary_from_row(r) for r in rows]

    # -- token ledger ----------------------------------------------------------------------------

    async def add_token_usage(
        self, chat_id: str, day: str, *, prompt_tokens: int, completion_tokens: int, calls: int = 1
    ) -> TokenUsage:
        result: list[TokenUsage] = []

        async def body(db: asyncpg.Connection) -> None:
            row = await db.fetchrow(_USAGE_ADD, chat_id, day, prompt_tokens, completion_tokens, calls)
            if row is not None:
                result.append(r_.usage_from_row(row))

        await self._tx("add_token_usage", body)
        return result[0]

    async def get_token_usage(self, chat_id: str, day: str) -> TokenUsage:
        row = await self._one(
            "SELECT chat_id, day, prompt_tokens, completion_tokens, calls FROM token_usage "
            "WHERE chat_id = ? AND day = ?",
            (chat_id, day),
        )
        return r_.usage_from_row(row) if row else TokenUsage(chat_id, day)

    async def list_token_usage(
        self, *, day: str | None = None, chat_id: str | None = None
    ) -> list[TokenUsage]:
        where, params = ["TRUE"], []
        if day is not None:
            where.append("day = ?")
            params.append(day)
        if chat_id is not None:
            where.append("chat_id = ?")
            params.append(chat_id)
        rows = await self._rows(
            "SELECT chat_id, day, prompt_tokens, completion_tokens, calls FROM token_usage "
            f"WHERE {' AND '.join(where)} ORDER BY chat_id, day",
            params,
        )
        return [r_.usage_from_row(r) for r in rows]

    # -- user profiles -----------------------------------------------------------------------------

    async def upsert_user_profile(self, profile: UserProfile) -> None:
        await self._execute("upsert_user_profile", _PROFILE_UPSERT, r_.profile_row(profile))

    async def get_user_profile(self, user_id: str) -> UserProfile | None:
        row = await self._one(f"SELECT {r_.PROFILE_COLUMNS} FROM user_profiles WHERE user_id = ?", (user_id,))
        return r_.profile_from_row(row) if row else None

    async def get_user_profiles(self, user_ids: Sequence[str]) -> Mapping[str, UserProfile]:
        self._check()
        if not user_ids:
            return {}
        rows = await self._rows(
            f"SELECT {r_.PROFILE_COLUMNS} FROM user_profiles WHERE user_id IN ({placeholders(user_ids)})",
            list(user_ids),
        )
        found = {r[0]: r_.profile_from_row(r) for r in rows}
        return {uid: found[uid] for uid in user_ids if uid in found}

    # -- episodes and tool calls ------------------------------------------------------------------

    async def save_episode(self, episode: EpisodeRecord) -> None:
        async def body(db: asyncpg.Connection) -> None:
            await db.execute(_EPISODE_UPSERT, *cleaned(r_.episode_row(episode)))
            if episode.steps:
                await db.execute(pg("DELETE FROM episode_steps WHERE episode_id = ?"), episode.id)
                await db.executemany(_STEP_UPSERT, [cleaned(r_.step_row(s)) for s in episode.steps])

        await self._tx("save_episode", body)

    async def append_episode_step(self, step: EpisodeStep) -> None:
        await self._execute("append_episode_step", _STEP_UPSERT, r_.step_row(step))

    async def get_episode(self, episode_id: str) -> EpisodeRecord | None:
        row = await self._one(f"SELECT {r_.EPISODE_COLUMNS} FROM episodes WHERE id = ?", (episode_id,))
        if row is None:
            return None
        steps = await self._rows(
            "SELECT episode_id, idx, kind, at, payload_json FROM episode_steps WHERE episode_id = ? "
            "ORDER BY idx",
            (episode_id,),
        )
        return r_.episode_from_row(row, tuple(r_.step_from_row(s) for s in steps))

    async def list_episodes(self, *, chat_id: str | None = None, limit: int = 20) -> list[EpisodeRecord]:
        where, params = ("chat_id = ?", [chat_id]) if chat_id is not None else ("TRUE", [])
        rows = await self._rows(
            f"SELECT {r_.EPISODE_COLUMNS} FROM episodes WHERE {where} "
            f"ORDER BY started_at DESC, id DESC LIMIT {max(int(limit), 0)}",
            params,
        )
        return [r_.episode_from_row(r) for r in rows]

    async def save_tool_call(self, call: ToolCallRecord) -> None:
        await self._execute("save_tool_call", TOOL_CALL_UPSERT, r_.tool_call_row(call))

    async def list_tool_calls(
        self, *, episode_id: str | None = None, chat_id: str | None = None, limit: int = 50
    ) -> list[ToolCallRecord]:
        where, params = ["TRUE"], []
        if episode_id is not None:
            where.append("episode_id = ?")
            params.append(episode_id)
        if chat_id is not None:
            where.append("chat_id = ?")
            params.append(chat_id)
        rows = await self._rows(
            f"SELECT {r_.TOOL_CALL_COLUMNS} FROM tool_calls WHERE {' AND '.join(where)} "
            f"ORDER BY started_at DESC, seq DESC LIMIT {max(int(limit), 0)}",
            params,
        )
        return [r_.tool_call_from_row(r) for r in reversed(rows)]
