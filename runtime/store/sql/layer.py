"""The tables of design/001 (summaries, token ledger, user profiles), episodes and tool calls, as both
SQL backends read and write them; the two transactions of several statements (a token count added, an
episode saved with its steps) stay with each backend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from runtime.store.records import (
    EpisodeRecord,
    EpisodeStep,
    MemorySummary,
    TokenUsage,
    ToolCallRecord,
    UserProfile,
)
from runtime.store.sql import rows as r_
from runtime.store.sql import statements as q
from runtime.store.sql.base import SqlBase
from runtime.store.sql.statements import placeholders


class LayerQueries(SqlBase):
    # -- memory summaries ---------------------------------------------------------------------

    async def upsert_memory_summary(self, summary: MemorySummary) -> None:
        await self._execute("upsert_memory_summary", q.SUMMARY_UPSERT, r_.summary_row(summary))

    async def get_memory_summary(self, conversation: str) -> MemorySummary | None:
        row = await self._one(
            f"SELECT {r_.SUMMARY_COLUMNS} FROM memory_summaries WHERE conversation = ?", (conversation,)
        )
        return r_.summary_from_row(row) if row else None

    async def list_memory_summaries(self) -> list[MemorySummary]:
        rows = await self._rows(f"SELECT {r_.SUMMARY_COLUMNS} FROM memory_summaries ORDER BY conversation")
        return [r_.summary_from_row(r) for r in rows]

    # -- token ledger ----------------------------------------------------------------------------

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
        await self._execute("upsert_user_profile", q.PROFILE_UPSERT, r_.profile_row(profile))

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

    async def append_episode_step(self, step: EpisodeStep) -> None:
        await self._execute("append_episode_step", q.STEP_UPSERT, r_.step_row(step))

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
        await self._execute("save_tool_call", q.TOOL_CALL_UPSERT, r_.tool_call_row(call))

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
