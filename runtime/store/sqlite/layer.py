"""The tables of design/001 on SQLite (summaries, token ledger, user profiles), episodes and tool calls."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from runtime.store.records import (
    EpisodeRecord,
    EpisodeStep,
    MemorySummary,
    TokenUsage,
    ToolCallRecord,
    UserProfile,
)
from runtime.store.sqlite import rows as r_
from runtime.store.sqlite.base import SqliteBase, placeholders, upsert_sql

_SUMMARY_UPSERT = upsert_sql("memory_summaries", r_.SUMMARY_COLUMNS, "conversation")
_PROFILE_UPSERT = upsert_sql("user_profiles", r_.PROFILE_COLUMNS, "user_id")
_EPISODE_UPSERT = upsert_sql("episodes", r_.EPISODE_COLUMNS, "id")
_STEP_UPSERT = upsert_sql("episode_steps", "episode_id, idx, kind, at, payload_json", "episode_id, idx")
TOOL_CALL_UPSERT = upsert_sql("tool_calls", r_.TOOL_CALL_COLUMNS, "id")
_USAGE_ADD = (
    "INSERT INTO token_usage (chat_id, day, prompt_tokens, completion_tokens, calls) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (chat_id, day) DO UPDATE SET "
    "prompt_tokens = prompt_tokens + excluded.prompt_tokens, "
    "completion_tokens = completion_tokens + excluded.completion_tokens, "
    "calls = calls + excluded.calls "
    "RETURNING chat_id, day, prompt_tokens, completion_tokens, calls"
)


class LayerTables(SqliteBase):
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
        def body(connection: sqlite3.Connection) -> TokenUsage:
            cursor = connection.execute(_USAGE_ADD, (chat_id, day, prompt_tokens, completion_tokens, calls))
            try:
                return r_.usage_from_row(cursor.fetchone())
            finally:
                cursor.close()

        usage: TokenUsage = await self._tx_in_thread("add_token_usage", body)
        return usage

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
        where, params = ["1"], []
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
        episode_row = r_.episode_row(episode)
        step_rows = [r_.step_row(s) for s in episode.steps]

        def body(connection: sqlite3.Connection) -> None:
            connection.execute(_EPISODE_UPSERT, episode_row).close()
            if step_rows:
                connection.execute("DELETE FROM episode_steps WHERE episode_id = ?", (episode.id,)).close()
                connection.executemany(_STEP_UPSERT, step_rows).close()

        await self._tx_in_thread("save_episode", body)

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
        where, params = ("chat_id = ?", [chat_id]) if chat_id is not None else ("1", [])
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
        where, params = ["1"], []
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
