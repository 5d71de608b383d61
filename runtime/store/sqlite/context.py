"""The tables of design/000 on SQLite: what differs from PostgreSQL (:mod:`runtime.store.sql.context`
has the rest): a memory's upsert with its vector in one transaction, the memory searches (FTS5's
``MATCH`` ranked by ``bm25``), a vector saved only for a stored memory."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

from runtime.store.protocol import MemoryScope
from runtime.store.records import Memory, MemoryHit
from runtime.store.sql import rows as r_
from runtime.store.sql import statements as q
from runtime.store.sql.context import ContextQueries
from runtime.store.sql.statements import scope_clause
from runtime.store.sqlite.base import SqliteBase
from runtime.store.text import fts_match, index_text, parse_query


class ContextTables(ContextQueries, SqliteBase):
    # CROSS JOIN keeps thread_chats the outer loop: the planner would otherwise walk every thread by
    # updated_at looking for the chat's.
    threads_join = "CROSS JOIN"
    tag_values = "json_each(m.tags_json)"

    # -- memories ----------------------------------------------------------------------------------

    async def upsert_memory(self, memory: Memory) -> None:
        indexed = await asyncio.to_thread(index_text, memory.content)

        row = r_.memory_row(memory, indexed)

        def body(connection: sqlite3.Connection) -> None:
            connection.execute(q.MEMORY_UPSERT, row).close()
            if memory.embedding is None:
                connection.execute(q.VECTOR_DELETE, (memory.id,)).close()
            else:
                vector = (memory.id, memory.embedding_model, memory.embedding)
                connection.execute(q.VECTOR_UPSERT, vector).close()

        await self._tx_in_thread("upsert_memory", body)

    async def search_memories(
        self, query: str, *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[MemoryHit]:
        self._check()
        parsed = parse_query(query)
        if parsed.empty or not scopes or limit <= 0:
            return []
        clause, params = scope_clause(scopes)
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
        clause, scope_params = scope_clause(scopes)
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
