"""The memory layer's, episodes' and tool calls' tables on SQLite: what differs from PostgreSQL
(:mod:`runtime.store.sql.layer` has the rest), the transactions of several statements, each one trip
to the write connection's thread."""

from __future__ import annotations

import sqlite3

from runtime.store.records import EpisodeRecord, TokenUsage
from runtime.store.sql import rows as r_
from runtime.store.sql import statements as q
from runtime.store.sql.layer import LayerQueries
from runtime.store.sqlite.base import SqliteBase


class LayerTables(LayerQueries, SqliteBase):
    async def add_token_usage(
        self, chat_id: str, day: str, *, prompt_tokens: int, completion_tokens: int, calls: int = 1
    ) -> TokenUsage:
        def body(connection: sqlite3.Connection) -> TokenUsage:
            cursor = connection.execute(q.USAGE_ADD, (chat_id, day, prompt_tokens, completion_tokens, calls))
            try:
                return r_.usage_from_row(cursor.fetchone())
            finally:
                cursor.close()

        usage: TokenUsage = await self._tx_in_thread("add_token_usage", body)
        return usage

    async def save_episode(self, episode: EpisodeRecord) -> None:
        episode_row = r_.episode_row(episode)
        step_rows = [r_.step_row(s) for s in episode.steps]

        def body(connection: sqlite3.Connection) -> None:
            connection.execute(q.EPISODE_UPSERT, episode_row).close()
            if step_rows:
                connection.execute(q.STEPS_DELETE, (episode.id,)).close()
                connection.executemany(q.STEP_UPSERT, step_rows).close()

        await self._tx_in_thread("save_episode", body)
