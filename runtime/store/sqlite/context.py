"""The tables of design/000 on SQLite: topic threads, sessions, transcripts, handoffs, tasks, memories."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

from runtime.store.protocol import MemoryScope
from runtime.store.records import (
    Handoff,
    Memory,
    MemoryHit,
    MemoryVector,
    ScopeType,
    Session,
    SessionState,
    Task,
    TaskStatus,
    TopicThread,
    TopicThreadStatus,
    TranscriptArchive,
)
from runtime.store.sqlite import rows as r_
from runtime.store.sqlite.base import SqliteBase, placeholders, upsert_sql
from runtime.store.text import fts_match, index_text, parse_query

_THREAD_UPSERT = upsert_sql("threads", r_.THREAD_COLUMNS, "id")
_SESSION_UPSERT = upsert_sql("sessions", r_.SESSION_COLUMNS, "id")
_TRANSCRIPT_UPSERT = upsert_sql("transcripts", r_.TRANSCRIPT_COLUMNS, "session_id")
_HANDOFF_UPSERT = upsert_sql("handoffs", r_.HANDOFF_COLUMNS, "id")
_TASK_UPSERT = upsert_sql("tasks", r_.TASK_COLUMNS, "id")
_MEMORY_UPSERT = upsert_sql(
    "memories",
    "id, scope_type, scope_id, memory_type, content, importance, tags_json, created_at, updated_at, "
    "extra_json, words, chars, source_message_id, source_speaker_id",
    "id",
)
_VECTOR_UPSERT = upsert_sql("memory_vectors", "memory_id, model, data", "memory_id")


def _limit(limit: int | None) -> str:
    return "" if limit is None else f" LIMIT {max(int(limit), 0)}"


def topic_threads_sql(
    *,
    statuses: Collection[TopicThreadStatus] | None = None,
    chat_id: str | None = None,
    limit: int | None = None,
) -> tuple[str, list[Any]]:
    """The listing of topic threads, newest first. A chat's goes from that chat's rows in
    ``thread_chats`` (``CROSS JOIN`` keeps that table the outer loop: the planner would otherwise walk
    every thread by ``updated_at`` looking for the chat's), so it reads the chat's threads only."""
    where, params = ["1"], []
    source = "threads"
    if chat_id is not None:
        source = "thread_chats AS c CROSS JOIN threads ON threads.id = c.thread_id"
        where.append("c.chat_id = ?")
        params.append(chat_id)
    if statuses is not None:
        where.append(f"status IN ({placeholders(statuses)})")
        params += [str(s) for s in statuses]
    sql = (
        f"SELECT {r_.THREAD_COLUMNS} FROM {source} WHERE {' AND '.join(where)} "
        f"ORDER BY updated_at DESC, threads.id DESC{_limit(limit)}"
    )
    return sql, params


def _scope_clause(scopes: Collection[MemoryScope]) -> tuple[str, list[Any]]:
    """``(m.scope_type = ? AND m.scope_id = ?) OR ...`` for the allowed scopes."""
    pairs = sorted({(str(kind), ident) for kind, ident in scopes})
    clause = " OR ".join("(m.scope_type = ? AND m.scope_id = ?)" for _ in pairs)
    return f"({clause})", [v for pair in pairs for v in pair]


class ContextTables(SqliteBase):
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
        sql, params = topic_threads_sql(statuses=statuses, chat_id=chat_id, limit=limit)
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
        where, params = ["1"], []
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
        where, params = ["1"], []
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

        row = r_.memory_row(memory, indexed)

        def body(connection: sqlite3.Connection) -> None:
            connection.execute(_MEMORY_UPSERT, row).close()
            if memory.embedding is None:
                connection.execute("DELETE FROM memory_vectors WHERE memory_id = ?", (memory.id,)).close()
            else:
                vector = (memory.id, memory.embedding_model, memory.embedding)
                connection.execute(_VECTOR_UPSERT, vector).close()

        await self._tx_in_thread("upsert_memory", body)

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
                f"EXISTS (SELECT 1 FROM json_each(m.tags_json) WHERE value IN ({placeholders(tags)}))"
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
        clause, params = _scope_clause(scopes)
        sql = (
            f"SELECT {r_.MEMORY_COLUMNS}, bm25(memories_fts, 2.0, 1.0) AS rank "
            "FROM memories_fts JOIN memories AS m ON m.seq = memories_fts.rowid "
            "LEFT JOIN memory_vectors AS v ON v.memory_id = m.id "
            f"WHERE memories_fts MATCH ? AND {clause} "
            f"ORDER BY rank, m.importance DESC, m.id LIMIT {int(limit)}"
        )
        found = await self._rows(sql, [fts_match(parsed), *params])
        return [MemoryHit(r_.memory_from_row(r), -float(r[-1])) for r in found]

    async def search_memories_each(
        self, queries: Sequence[str], *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[list[MemoryHit]]:
        # One branch per query, each search_memories' own statement (its order and limit) numbered
        # by the query; the outer order repeats each branch's, so every query's hits come in order.
        self._check()
        each: list[list[MemoryHit]] = [[] for _ in queries]
        if not scopes or limit <= 0:
            return each
        clause, scope_params = _scope_clause(scopes)
        branches: list[str] = []
        params: list[Any] = []
        for index, query in enumerate(queries):
            parsed = parse_query(query)
            if parsed.empty:
                continue
            branches.append(
                f"SELECT * FROM (SELECT {r_.MEMORY_COLUMNS}, bm25(memories_fts, 2.0, 1.0) AS rank, "
                f"{index} AS query_index "
                "FROM memories_fts JOIN memories AS m ON m.seq = memories_fts.rowid "
                "LEFT JOIN memory_vectors AS v ON v.memory_id = m.id "
                f"WHERE memories_fts MATCH ? AND {clause} "
                f"ORDER BY rank, m.importance DESC, m.id LIMIT {int(limit)})"
            )
            params += [fts_match(parsed), *scope_params]
        if not branches:
            return each
        sql = " UNION ALL ".join(branches) + " ORDER BY query_index, rank, importance DESC, id"
        for r in await self._rows(sql, params):
            each[int(r[-1])].append(MemoryHit(r_.memory_from_row(r), -float(r[-2])))
        return each

    async def save_memory_vector(self, memory_id: str, data: bytes, *, model: str | None = None) -> None:
        await self._execute(
            "save_memory_vector",
            "INSERT INTO memory_vectors (memory_id, model, data) "
            "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?) "
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
