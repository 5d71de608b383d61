"""The tables of design/000 as both SQL backends read and write them: topic threads, sessions,
transcripts, handoffs, tasks, and the memories' plain reads.

What the dialects do differently stays with each backend: a memory's upsert (its full-text columns),
the memory searches, a vector saved only for a stored memory. Two phrases differ and are class
attributes a backend sets: how the listing of a chat's threads joins ``thread_chats``
(:attr:`ContextQueries.threads_join`), and how a memory's JSON list of tags is read as rows
(:attr:`ContextQueries.tag_values`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

from runtime.store.protocol import MemoryScope
from runtime.store.records import (
    Handoff,
    Memory,
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
from runtime.store.sql import rows as r_
from runtime.store.sql import statements as q
from runtime.store.sql.base import SqlBase
from runtime.store.sql.statements import limit_sql, placeholders, scope_clause


def topic_threads_sql(
    *,
    statuses: Collection[TopicThreadStatus] | None = None,
    chat_id: str | None = None,
    limit: int | None = None,
    join: str = "JOIN",
) -> tuple[str, list[Any]]:
    """The listing of topic threads, newest first. A chat's goes from that chat's rows in
    ``thread_chats`` (kept by a trigger), so it reads the chat's threads only, not every thread's
    chat list; ``join`` is how they are joined to ``threads``."""
    where, params = ["TRUE"], []
    source = "threads"
    if chat_id is not None:
        source = f"thread_chats AS c {join} threads ON threads.id = c.thread_id"
        where.append("c.chat_id = ?")
        params.append(chat_id)
    if statuses is not None:
        where.append(f"status IN ({placeholders(statuses)})")
        params += [str(s) for s in statuses]
    sql = (
        f"SELECT {r_.THREAD_COLUMNS} FROM {source} WHERE {' AND '.join(where)} "
        f"ORDER BY updated_at DESC, threads.id DESC{limit_sql(limit)}"
    )
    return sql, params


class ContextQueries(SqlBase):
    threads_join: ClassVar[str] = "JOIN"
    """How a chat's listing joins its ``thread_chats`` rows to ``threads``."""
    tag_values: ClassVar[str]
    """A table expression with one row per tag of memory ``m``, its column named ``value``."""

    # -- topic threads --------------------------------------------------------------------------

    async def upsert_topic_thread(self, thread: TopicThread) -> None:
        await self._execute("upsert_topic_thread", q.THREAD_UPSERT, r_.thread_row(thread))

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
        join = self.threads_join
        sql, params = topic_threads_sql(statuses=statuses, chat_id=chat_id, limit=limit, join=join)
        return [r_.thread_from_row(r) for r in await self._rows(sql, params)]

    # -- sessions and transcripts ---------------------------------------------------------------

    async def upsert_session(self, session: Session) -> None:
        await self._execute("upsert_session", q.SESSION_UPSERT, r_.session_row(session))

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
            f"ORDER BY updated_at DESC, id DESC{limit_sql(limit)}"
        )
        return [r_.session_from_row(r) for r in await self._rows(sql, params)]

    async def save_transcript(self, archive: TranscriptArchive) -> None:
        await self._execute("save_transcript", q.TRANSCRIPT_UPSERT, r_.transcript_row(archive))

    async def get_transcript(self, session_id: str) -> TranscriptArchive | None:
        row = await self._one(
            f"SELECT {r_.TRANSCRIPT_COLUMNS} FROM transcripts WHERE session_id = ?", (session_id,)
        )
        return r_.transcript_from_row(row) if row else None

    # -- handoffs ------------------------------------------------------------------------------

    async def save_handoff(self, handoff: Handoff) -> None:
        await self._execute("save_handoff", q.HANDOFF_UPSERT, r_.handoff_row(handoff))

    async def get_handoff(self, handoff_id: str) -> Handoff | None:
        row = await self._one(f"SELECT {r_.HANDOFF_COLUMNS} FROM handoffs WHERE id = ?", (handoff_id,))
        return r_.handoff_from_row(row) if row else None

    async def list_handoffs(self, topic_thread_id: str, *, limit: int = 10) -> list[Handoff]:
        rows = await self._rows(
            f"SELECT {r_.HANDOFF_COLUMNS} FROM handoffs WHERE thread_id = ? "
            f"ORDER BY created_at DESC, seq DESC{limit_sql(limit)}",
            (topic_thread_id,),
        )
        return [r_.handoff_from_row(r) for r in rows]

    async def latest_handoff(self, topic_thread_id: str) -> Handoff | None:
        found = await self.list_handoffs(topic_thread_id, limit=1)
        return found[0] if found else None

    # -- tasks -----------------------------------------------------------------------------------

    async def upsert_task(self, task: Task) -> None:
        await self._execute("upsert_task", q.TASK_UPSERT, r_.task_row(task))

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
            f"ORDER BY updated_at DESC, id DESC{limit_sql(limit)}"
        )
        return [r_.task_from_row(r) for r in await self._rows(sql, params)]

    # -- memories ----------------------------------------------------------------------------------

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
        clause, params = scope_clause(scopes)
        where = [clause]
        if memory_types is not None:
            where.append(f"m.memory_type IN ({placeholders(memory_types)})")
            params += list(memory_types)
        if tags is not None:
            where.append(f"EXISTS (SELECT 1 FROM {self.tag_values} WHERE value IN ({placeholders(tags)}))")
            params += list(tags)
        if since is not None:
            where.append("m.created_at >= ?")
            params.append(since)
        if min_importance is not None:
            where.append("m.importance >= ?")
            params.append(min_importance)
        sql = (
            f"SELECT {r_.MEMORY_COLUMNS} FROM {r_.MEMORY_FROM} WHERE {' AND '.join(where)} "
            f"ORDER BY m.created_at DESC, m.id DESC{limit_sql(limit)}"
        )
        return [r_.memory_from_row(r) for r in await self._rows(sql, params)]

    async def load_memory_vectors(
        self, *, scopes: Collection[MemoryScope], model: str | None = None
    ) -> list[MemoryVector]:
        self._check()
        if not scopes:
            return []
        clause, params = scope_clause(scopes)
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
