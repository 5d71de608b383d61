"""The log as both SQL backends read it: messages, events, scheduled activations, the speech log and
the lexicon's terms. Everything is written through the backend's :meth:`LogQueries.write` (one
transaction of write items, the store writer's path); the searches and the whole-lexicon
replacement stay with each backend.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Sequence
from typing import Any

from runtime.store.records import (
    EventRecord,
    LexiconTermRecord,
    ScheduledActivation,
    SpeechRecord,
    StoredMessage,
    WriteItem,
)
from runtime.store.sql import rows as r_
from runtime.store.sql import statements as q
from runtime.store.sql.base import SqlBase
from runtime.store.sql.statements import placeholders


class LogQueries(SqlBase):
    @abstractmethod
    async def write(self, items: Sequence[WriteItem]) -> None:
        """Every item in one transaction, in order."""

    # -- messages ---------------------------------------------------------------------------------

    async def append_messages(self, messages: Sequence[StoredMessage]) -> None:
        await self.write(messages)

    async def get_message(self, chat_id: str, message_id: str) -> StoredMessage | None:
        row = await self._one(
            f"SELECT {r_.MESSAGE_COLUMNS} FROM messages WHERE chat_id = ? AND message_id = ? "
            "ORDER BY time DESC, seq DESC LIMIT 1",
            (chat_id, message_id),
        )
        return r_.message_from_row(row) if row else None

    async def get_messages(self, chat_id: str, message_ids: Sequence[str]) -> list[StoredMessage]:
        self._check()
        if not message_ids:
            return []
        rows = await self._rows(
            f"SELECT {r_.MESSAGE_COLUMNS} FROM messages "
            f"WHERE chat_id = ? AND message_id IN ({placeholders(message_ids)}) ORDER BY time, seq",
            [chat_id, *message_ids],
        )
        found = {r[1]: r_.message_from_row(r) for r in rows}  # a repeated id: the most recent wins
        return [found[mid] for mid in message_ids if mid in found]

    async def _latest(self, where: str, params: list[Any], limit: int) -> list[StoredMessage]:
        rows = await self._rows(
            f"SELECT {r_.MESSAGE_COLUMNS} FROM messages WHERE {where} "
            f"ORDER BY time DESC, seq DESC LIMIT {max(int(limit), 0)}",
            params,
        )
        return [r_.message_from_row(r) for r in reversed(rows)]

    async def recent_messages(
        self, chat_id: str, *, limit: int = 50, before: float | None = None
    ) -> list[StoredMessage]:
        if before is None:
            return await self._latest("chat_id = ?", [chat_id], limit)
        return await self._latest("chat_id = ? AND time < ?", [chat_id, before], limit)

    async def list_messages(
        self, chat_id: str, *, since: float | None = None, until: float | None = None, limit: int = 1000
    ) -> list[StoredMessage]:
        where: list[str] = ["chat_id = ?"]
        params: list[Any] = [chat_id]
        if since is not None:
            where.append("time >= ?")
            params.append(since)
        if until is not None:
            where.append("time < ?")
            params.append(until)
        rows = await self._rows(
            f"SELECT {r_.MESSAGE_COLUMNS} FROM messages WHERE {' AND '.join(where)} "
            f"ORDER BY time, seq LIMIT {max(int(limit), 0)}",
            params,
        )
        return [r_.message_from_row(r) for r in rows]

    async def conversation_messages(self, thread_id: str, *, limit: int = 50) -> list[StoredMessage]:
        return await self._latest("thread_id = ?", [thread_id], limit)

    async def topic_messages(
        self, topic_thread_id: str, *, chat_id: str | None = None, limit: int = 50
    ) -> list[StoredMessage]:
        if chat_id is None:
            return await self._latest("topic_thread_id = ?", [topic_thread_id], limit)
        return await self._latest("topic_thread_id = ? AND chat_id = ?", [topic_thread_id, chat_id], limit)

    async def count_messages(self, chat_id: str | None = None) -> int:
        if chat_id is None:
            row = await self._one("SELECT COUNT(*) FROM messages")
        else:
            row = await self._one("SELECT COUNT(*) FROM messages WHERE chat_id = ?", (chat_id,))
        return int(row[0]) if row else 0

    async def messages_since(self, since: float, *, per_chat: int = 200) -> list[StoredMessage]:
        rows = await self._rows(
            f"SELECT {r_.MESSAGE_COLUMNS} FROM ("
            f"  SELECT *, ROW_NUMBER() OVER (PARTITION BY chat_id ORDER BY time DESC, seq DESC) AS rn"
            f"  FROM messages WHERE time >= ?"
            f") AS latest WHERE rn <= ? ORDER BY time, seq",
            (since, max(int(per_chat), 0)),
        )
        return [r_.message_from_row(r) for r in rows]

    # -- events and activations -----------------------------------------------------------------

    async def save_event(self, event: EventRecord) -> None:
        await self.write([event])

    async def get_event(self, event_id: str) -> EventRecord | None:
        row = await self._one(f"SELECT {r_.EVENT_COLUMNS} FROM events WHERE id = ?", (event_id,))
        return r_.event_from_row(row) if row else None

    async def delete_event(self, event_id: str) -> bool:
        return await self._execute("delete_event", "DELETE FROM events WHERE id = ?", (event_id,)) > 0

    async def load_events(self, *, states: Collection[str] | None = None) -> list[EventRecord]:
        if states is None:
            rows = await self._rows(f"SELECT {r_.EVENT_COLUMNS} FROM events ORDER BY created_at, id")
        elif not states:
            return []
        else:
            rows = await self._rows(
                f"SELECT {r_.EVENT_COLUMNS} FROM events WHERE state IN ({placeholders(states)}) "
                "ORDER BY created_at, id",
                [str(s) for s in states],
            )
        return [r_.event_from_row(r) for r in rows]

    async def prune_events(self, *, states: Collection[str], updated_before: float) -> int:
        if not states:
            return 0
        return await self._execute(
            "prune_events",
            f"DELETE FROM events WHERE state IN ({placeholders(states)}) AND updated_at < ?",
            [*(str(s) for s in states), updated_before],
        )

    async def save_activation(self, activation: ScheduledActivation) -> None:
        await self.write([activation])

    async def delete_activation(self, event_id: str) -> bool:
        return await self._execute("delete_activation", q.ACTIVATION_DELETE, (event_id,)) > 0

    async def load_pending_activations(self) -> list[ScheduledActivation]:
        rows = await self._rows(
            f"SELECT {r_.ACTIVATION_COLUMNS} FROM scheduled_activations "
            "ORDER BY not_before, priority DESC, event_id"
        )
        return [r_.activation_from_row(r) for r in rows]

    # -- speech log -------------------------------------------------------------------------------

    async def append_speech(self, speech: SpeechRecord) -> None:
        await self.write([speech])

    async def recent_speeches(self, chat_id: str, *, since: float) -> list[SpeechRecord]:
        rows = await self._rows(
            "SELECT chat_id, time, forced FROM speech_log WHERE chat_id = ? AND time >= ? ORDER BY time, seq",
            (chat_id, since),
        )
        return [r_.speech_from_row(r) for r in rows]

    async def load_recent_speeches(self, *, since: float) -> dict[str, list[SpeechRecord]]:
        rows = await self._rows(
            "SELECT chat_id, time, forced FROM speech_log WHERE time >= ? ORDER BY time, seq", (since,)
        )
        out: dict[str, list[SpeechRecord]] = {}
        for r in rows:
            out.setdefault(r[0], []).append(r_.speech_from_row(r))
        return out

    async def prune_speeches(self, *, before: float) -> int:
        return await self._execute("prune_speeches", "DELETE FROM speech_log WHERE time < ?", (before,))

    # -- lexicon ----------------------------------------------------------------------------------

    async def save_lexicon_terms(self, terms: Sequence[LexiconTermRecord]) -> None:
        await self._executemany("save_lexicon_terms", q.TERM_UPSERT, [r_.term_row(t) for t in terms])

    async def delete_lexicon_term(self, scope: str, owner: str, term: str) -> bool:
        changed = await self._execute(
            "delete_lexicon_term",
            "DELETE FROM lexicon_terms WHERE scope = ? AND owner = ? AND term = ?",
            (scope, owner, term),
        )
        return changed > 0

    async def load_lexicon_terms(
        self, *, scope: str | None = None, owner: str | None = None
    ) -> list[LexiconTermRecord]:
        where, params = ["TRUE"], []
        if scope is not None:
            where.append("scope = ?")
            params.append(scope)
        if owner is not None:
            where.append("owner = ?")
            params.append(owner)
        rows = await self._rows(
            f"SELECT {r_.TERM_COLUMNS} FROM lexicon_terms WHERE {' AND '.join(where)} "
            "ORDER BY scope, owner, term",
            params,
        )
        return [r_.term_from_row(r) for r in rows]
