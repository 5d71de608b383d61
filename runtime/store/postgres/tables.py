"""The tables of design/000 and design/001 on PostgreSQL: what differs from SQLite
(:mod:`runtime.store.sql.context` and :mod:`runtime.store.sql.layer` have the rest). A memory is
full-text searched like the messages (:mod:`runtime.store.postgres.search`), its JSON list of tags is
read with ``jsonb_array_elements_text``, and the transactions of several statements run on one pooled
connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from typing import Any

import asyncpg

from runtime.store.postgres.base import PostgresBase, cleaned, pg
from runtime.store.postgres.search import text_match, vectors
from runtime.store.protocol import MemoryScope
from runtime.store.records import EpisodeRecord, Memory, MemoryHit, TokenUsage
from runtime.store.sql import rows as r_
from runtime.store.sql import statements as q
from runtime.store.sql.context import ContextQueries
from runtime.store.sql.layer import LayerQueries
from runtime.store.sql.statements import scope_clause
from runtime.store.text import index_text, parse_query

# Statements run on a pooled connection directly (inside a transaction), numbered once here.
_MEMORY_UPSERT = pg(q.MEMORY_UPSERT)
_VECTOR_UPSERT = pg(q.VECTOR_UPSERT)
_VECTOR_DELETE = pg(q.VECTOR_DELETE)
_EPISODE_UPSERT = pg(q.EPISODE_UPSERT)
_STEPS_DELETE = pg(q.STEPS_DELETE)
_STEP_UPSERT = pg(q.STEP_UPSERT)
_USAGE_ADD = pg(q.USAGE_ADD)


class ContextTables(ContextQueries, PostgresBase):
    tag_values = "jsonb_array_elements_text(m.tags_json::jsonb) AS j (value)"

    # -- memories ----------------------------------------------------------------------------------

    async def upsert_memory(self, memory: Memory) -> None:
        indexed = await asyncio.to_thread(index_text, memory.content)

        words, chars = vectors(indexed)
        row = r_.memory_row(memory, indexed)
        row = (*row[:10], words, chars, *row[12:])

        async def body(db: asyncpg.Connection) -> None:
            await db.execute(_MEMORY_UPSERT, *cleaned(row))
            if memory.embedding is None:
                await db.execute(_VECTOR_DELETE, memory.id)
            else:
                await db.execute(_VECTOR_UPSERT, memory.id, memory.embedding_model, memory.embedding)

        await self._tx("upsert_memory", body)

    async def search_memories(
        self, query: str, *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[MemoryHit]:
        self._check()
        parsed = parse_query(query)
        if parsed.empty or not scopes or limit <= 0:
            return []
        clause, values = scope_clause(scopes)
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
        clause, scope_values = scope_clause(scopes)
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


class LayerTables(LayerQueries, PostgresBase):
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

    async def save_episode(self, episode: EpisodeRecord) -> None:
        async def body(db: asyncpg.Connection) -> None:
            await db.execute(_EPISODE_UPSERT, *cleaned(r_.episode_row(episode)))
            if episode.steps:
                await db.execute(_STEPS_DELETE, episode.id)
                await db.executemany(_STEP_UPSERT, [cleaned(r_.step_row(s)) for s in episode.steps])

        await self._tx("save_episode", body)
