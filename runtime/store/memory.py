"""``MemoryStore``: the Protocol held in dicts, for tests and the replay tool. Nothing survives the process.

It keeps the same contract as the SQLite backend (``tests/store/test_contract.py`` runs on both),
including full-text search with the same segmentation rules (``runtime.store.text``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace

from runtime.store.errors import StoreClosedError
from runtime.store.memory_tables import MemoryTables
from runtime.store.protocol import DEFAULT_RESTORE, RestorePolicy, StoreStatistics
from runtime.store.records import (
    ActivationDone,
    EventRecord,
    LexiconTermRecord,
    MessageHit,
    MessageRecalled,
    RuntimeState,
    ScheduledActivation,
    SpeechRecord,
    StoredMessage,
    ToolCallRecord,
    TopicLink,
    WriteItem,
    same_delivery,
)
from runtime.store.restore import load_runtime_state
from runtime.store.text import IndexedText, index_text, match_score, parse_query

_WRITE_TYPES = (
    StoredMessage,
    MessageRecalled,
    TopicLink,
    SpeechRecord,
    EventRecord,
    ScheduledActivation,
    ActivationDone,
    ToolCallRecord,
)


@dataclass(slots=True)
class _Row:
    seq: int
    message: StoredMessage
    indexed: IndexedText


class MemoryStore(MemoryTables):
    """In-memory backend of :class:`runtime.store.protocol.Store`."""

    def __init__(self) -> None:
        self._closed = False
        self._seq = itertools.count()
        self._messages: dict[int, _Row] = {}  # by seq: a platform id may name several messages
        self._by_id: dict[tuple[str, str], list[_Row]] = defaultdict(list)  # insertion order
        self._events: dict[str, EventRecord] = {}
        self._activations: dict[str, ScheduledActivation] = {}
        self._speeches: list[SpeechRecord] = []
        self._terms: dict[tuple[str, str, str], LexiconTermRecord] = {}
        self._init_tables()
        self._batches = 0
        self._items = 0

    # -- lifecycle ----------------------------------------------------------------------------

    def _check(self) -> None:
        if self._closed:
            raise StoreClosedError("the in-memory store is closed")

    async def close(self) -> None:
        self._closed = True

    def statistics(self) -> StoreStatistics:
        return StoreStatistics(
            backend="memory",
            messages=len(self._messages),
            batches_written=self._batches,
            items_written=self._items,
            write_failures=0,
            schema_version=0,
        )

    # -- batched writes -------------------------------------------------------------------------

    async def write(self, items: Sequence[WriteItem]) -> None:
        self._check()
        # Validate and segment first: a failure there leaves nothing half-applied.
        for item in items:
            if not isinstance(item, _WRITE_TYPES):
                raise TypeError(f"not a write item: {item!r}")
        items = [i.encodable() if isinstance(i, StoredMessage) else i for i in items]
        indexed = {id(i): index_text(i.text) for i in items if isinstance(i, StoredMessage)}
        for item in items:
            self._apply(item, indexed.get(id(item)))
        self._batches += 1
        self._items += len(items)

    def _apply(self, item: WriteItem, indexed: IndexedText | None) -> None:
        if isinstance(item, StoredMessage):
            same_id = self._by_id[(item.chat_id, item.message_id)]
            if any(same_delivery(r.message, item) for r in same_id):
                return  # a repeated delivery of a stored message
            row = _Row(next(self._seq), item, indexed or index_text(item.text))
            self._messages[row.seq] = row
            same_id.append(row)
        elif isinstance(item, MessageRecalled):
            recalled = self._latest(item.chat_id, item.message_id)
            if recalled:
                recalled.message = replace(recalled.message, recalled=True)
        elif isinstance(item, TopicLink):
            for mid in item.message_ids:
                linked = self._latest(item.chat_id, mid)
                if linked:
                    linked.message = replace(linked.message, topic_thread_id=item.topic_thread_id)
        elif isinstance(item, SpeechRecord):
            self._speeches.append(item)
        elif isinstance(item, EventRecord):
            self._events[item.id] = item
        elif isinstance(item, ScheduledActivation):
            self._activations[item.event_id] = item
        elif isinstance(item, ActivationDone):
            self._activations.pop(item.event_id, None)
        elif isinstance(item, ToolCallRecord):
            old_call = self._tool_calls.get(item.id)
            self._tool_calls[item.id] = (old_call[0] if old_call else next(self._seq), item)
        else:  # pragma: no cover - the union is closed
            raise TypeError(f"not a write item: {item!r}")

    # -- messages ---------------------------------------------------------------------------------

    async def append_messages(self, messages: Sequence[StoredMessage]) -> None:
        await self.write(messages)

    def _latest(self, chat_id: str, message_id: str) -> _Row | None:
        """The most recent message with this platform id."""
        rows = self._by_id.get((chat_id, message_id))
        return max(rows, key=lambda r: (r.message.time, r.seq)) if rows else None

    async def get_message(self, chat_id: str, message_id: str) -> StoredMessage | None:
        self._check()
        row = self._latest(chat_id, message_id)
        return row.message if row else None

    async def get_messages(self, chat_id: str, message_ids: Sequence[str]) -> list[StoredMessage]:
        self._check()
        rows = (self._latest(chat_id, mid) for mid in message_ids)
        return [r.message for r in rows if r]

    def _sorted(self, rows: Iterable[_Row]) -> list[_Row]:
        return sorted(rows, key=lambda r: (r.message.time, r.seq))

    async def recent_messages(
        self, chat_id: str, *, limit: int = 50, before: float | None = None
    ) -> list[StoredMessage]:
        self._check()
        rows = self._sorted(
            r
            for r in self._messages.values()
            if r.message.chat_id == chat_id and (before is None or r.message.time < before)
        )
        return [r.message for r in rows[-limit:]] if limit > 0 else []

    async def list_messages(
        self, chat_id: str, *, since: float | None = None, until: float | None = None, limit: int = 1000
    ) -> list[StoredMessage]:
        self._check()
        rows = self._sorted(
            r
            for r in self._messages.values()
            if r.message.chat_id == chat_id
            and (since is None or r.message.time >= since)
            and (until is None or r.message.time < until)
        )
        return [r.message for r in rows[:limit]]

    async def conversation_messages(self, thread_id: str, *, limit: int = 50) -> list[StoredMessage]:
        self._check()
        rows = self._sorted(r for r in self._messages.values() if r.message.thread_id == thread_id)
        return [r.message for r in rows[-limit:]] if limit > 0 else []

    async def topic_messages(
        self, topic_thread_id: str, *, chat_id: str | None = None, limit: int = 50
    ) -> list[StoredMessage]:
        self._check()
        rows = self._sorted(
            r
            for r in self._messages.values()
            if r.message.topic_thread_id == topic_thread_id
            and (chat_id is None or r.message.chat_id == chat_id)
        )
        return [r.message for r in rows[-limit:]] if limit > 0 else []

    async def search_messages(
        self,
        query: str,
        *,
        chat_ids: Collection[str],
        limit: int = 10,
        topic_thread_id: str | None = None,
        include_recalled: bool = False,
        newest: int | None = None,
    ) -> list[MessageHit]:
        self._check()
        parsed = parse_query(query)
        chats = set(chat_ids)
        if parsed.empty or not chats or limit <= 0 or (newest is not None and newest <= 0):
            return []
        matching = [
            (score, row)
            for row in self._messages.values()
            if row.message.chat_id in chats and (score := match_score(parsed, row.indexed)) > 0
        ]
        if newest is not None:
            matching = sorted(matching, key=lambda found: -found[1].seq)[:newest]
        hits: list[tuple[float, int, StoredMessage]] = []
        for score, row in matching:
            m = row.message
            if m.recalled and not include_recalled:
                continue
            if topic_thread_id is not None and m.topic_thread_id != topic_thread_id:
                continue
            hits.append((score, row.seq, m))
        hits.sort(key=lambda h: (-h[0], -h[1]))
        return [MessageHit(m, s) for s, _, m in hits[:limit]]

    async def count_messages(self, chat_id: str | None = None) -> int:
        self._check()
        if chat_id is None:
            return len(self._messages)
        return sum(1 for r in self._messages.values() if r.message.chat_id == chat_id)

    async def messages_since(self, since: float, *, per_chat: int = 200) -> list[StoredMessage]:
        self._check()
        by_chat: dict[str, list[_Row]] = defaultdict(list)
        for row in self._sorted(r for r in self._messages.values() if r.message.time >= since):
            by_chat[row.message.chat_id].append(row)
        kept = [r for rows in by_chat.values() for r in rows[-per_chat:]] if per_chat > 0 else []
        return [r.message for r in self._sorted(kept)]

    # -- events and activations -----------------------------------------------------------------

    async def save_event(self, event: EventRecord) -> None:
        await self.write([event])

    async def get_event(self, event_id: str) -> EventRecord | None:
        self._check()
        return self._events.get(event_id)

    async def delete_event(self, event_id: str) -> bool:
        self._check()
        return self._events.pop(event_id, None) is not None

    async def load_events(self, *, states: Collection[str] | None = None) -> list[EventRecord]:
        self._check()
        wanted = None if states is None else {str(s) for s in states}
        events = [e for e in self._events.values() if wanted is None or e.state in wanted]
        return sorted(events, key=lambda e: (e.created_at, e.id))

    async def prune_events(self, *, states: Collection[str], updated_before: float) -> int:
        self._check()
        wanted = {str(s) for s in states}
        doomed = [e.id for e in self._events.values() if e.state in wanted and e.updated_at < updated_before]
        for event_id in doomed:
            del self._events[event_id]
        return len(doomed)

    async def save_activation(self, activation: ScheduledActivation) -> None:
        await self.write([activation])

    async def delete_activation(self, event_id: str) -> bool:
        self._check()
        return self._activations.pop(event_id, None) is not None

    async def load_pending_activations(self) -> list[ScheduledActivation]:
        self._check()
        return sorted(self._activations.values(), key=lambda a: (a.not_before, -a.priority, a.event_id))

    # -- speech log -------------------------------------------------------------------------------

    async def append_speech(self, speech: SpeechRecord) -> None:
        await self.write([speech])

    async def recent_speeches(self, chat_id: str, *, since: float) -> list[SpeechRecord]:
        self._check()
        return sorted(
            (s for s in self._speeches if s.chat_id == chat_id and s.time >= since), key=lambda s: s.time
        )

    async def load_recent_speeches(self, *, since: float) -> dict[str, list[SpeechRecord]]:
        self._check()
        out: dict[str, list[SpeechRecord]] = defaultdict(list)
        for speech in sorted(self._speeches, key=lambda s: s.time):
            if speech.time >= since:
                out[speech.chat_id].append(speech)
        return dict(out)

    async def prune_speeches(self, *, before: float) -> int:
        self._check()
        kept = [s for s in self._speeches if s.time >= before]
        pruned = len(self._speeches) - len(kept)
        self._speeches = kept
        return pruned

    # -- lexicon ----------------------------------------------------------------------------------

    async def save_lexicon_terms(self, terms: Sequence[LexiconTermRecord]) -> None:
        self._check()
        for term in terms:
            self._terms[(term.scope, term.owner, term.term)] = term

    async def delete_lexicon_term(self, scope: str, owner: str, term: str) -> bool:
        self._check()
        return self._terms.pop((scope, owner, term), None) is not None

    async def replace_lexicon_terms(self, terms: Sequence[LexiconTermRecord]) -> None:
        self._check()
        self._terms = {(t.scope, t.owner, t.term): t for t in terms}

    async def load_lexicon_terms(
        self, *, scope: str | None = None, owner: str | None = None
    ) -> list[LexiconTermRecord]:
        self._check()
        return [
            t
            for key, t in sorted(self._terms.items())
            if (scope is None or t.scope == scope) and (owner is None or t.owner == owner)
        ]

    # -- restoration ----------------------------------------------------------------------------

    async def load_runtime_state(
        self, *, now: float, policy: RestorePolicy = DEFAULT_RESTORE
    ) -> RuntimeState:
        self._check()
        return await load_runtime_state(self, now=now, policy=policy)
