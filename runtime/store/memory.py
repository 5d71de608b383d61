"""``MemoryStore``: the Protocol held in dicts, for tests and the replay tool. Nothing survives the process.

It keeps the same contract as the SQLite backend (``tests/store/test_contract.py`` runs on both),
including full-text search with the same segmentation rules (``runtime.store.text``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from runtime.store.errors import StoreClosedError
from runtime.store.protocol import DEFAULT_RESTORE, MemoryScope, RestorePolicy, StoreStatistics
from runtime.store.records import (
    ActivationDone,
    EpisodeRecord,
    EpisodeStep,
    EventRecord,
    Handoff,
    LexiconTermRecord,
    Memory,
    MemoryHit,
    MemorySummary,
    MemoryVector,
    MessageHit,
    MessageRecalled,
    RuntimeState,
    ScheduledActivation,
    Session,
    SessionState,
    SpeechRecord,
    StoredMessage,
    Task,
    TaskStatus,
    TokenUsage,
    ToolCallRecord,
    TopicLink,
    TopicThread,
    TopicThreadStatus,
    TranscriptArchive,
    UserProfile,
    WriteItem,
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


class MemoryStore:
    """In-memory backend of :class:`runtime.store.protocol.Store`."""

    def __init__(self) -> None:
        self._closed = False
        self._seq = itertools.count()
        self._messages: dict[tuple[str, str], _Row] = {}
        self._events: dict[str, EventRecord] = {}
        self._activations: dict[str, ScheduledActivation] = {}
        self._speeches: list[SpeechRecord] = []
        self._terms: dict[tuple[str, str, str], LexiconTermRecord] = {}
        self._threads: dict[str, TopicThread] = {}
        self._sessions: dict[str, Session] = {}
        self._transcripts: dict[str, TranscriptArchive] = {}
        self._handoffs: dict[str, tuple[int, Handoff]] = {}
        self._tasks: dict[str, Task] = {}
        self._memories: dict[str, tuple[Memory, IndexedText]] = {}
        self._summaries: dict[str, MemorySummary] = {}
        self._usage: dict[tuple[str, str], TokenUsage] = {}
        self._profiles: dict[str, UserProfile] = {}
        self._episodes: dict[str, EpisodeRecord] = {}
        self._steps: dict[str, dict[int, EpisodeStep]] = defaultdict(dict)
        self._tool_calls: dict[str, tuple[int, ToolCallRecord]] = {}
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
        indexed = {id(i): index_text(i.text) for i in items if isinstance(i, StoredMessage)}
        for item in items:
            self._apply(item, indexed.get(id(item)))
        self._batches += 1
        self._items += len(items)

    def _apply(self, item: WriteItem, indexed: IndexedText | None) -> None:
        if isinstance(item, StoredMessage):
            key = (item.chat_id, item.message_id)
            old = self._messages.get(key)
            seq = old.seq if old else next(self._seq)
            self._messages[key] = _Row(seq, item, indexed or index_text(item.text))
        elif isinstance(item, MessageRecalled):
            row = self._messages.get((item.chat_id, item.message_id))
            if row:
                row.message = replace(row.message, recalled=True)
        elif isinstance(item, TopicLink):
            for mid in item.message_ids:
                row = self._messages.get((item.chat_id, mid))
                if row:
                    row.message = replace(row.message, topic_thread_id=item.topic_thread_id)
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

    async def get_message(self, chat_id: str, message_id: str) -> StoredMessage | None:
        self._check()
        row = self._messages.get((chat_id, message_id))
        return row.message if row else None

    async def get_messages(self, chat_id: str, message_ids: Sequence[str]) -> list[StoredMessage]:
        self._check()
        rows = (self._messages.get((chat_id, mid)) for mid in message_ids)
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
    ) -> list[MessageHit]:
        self._check()
        parsed = parse_query(query)
        chats = set(chat_ids)
        if parsed.empty or not chats or limit <= 0:
            return []
        hits: list[tuple[float, int, StoredMessage]] = []
        for row in self._messages.values():
            m = row.message
            if m.chat_id not in chats or (m.recalled and not include_recalled):
                continue
            if topic_thread_id is not None and m.topic_thread_id != topic_thread_id:
                continue
            score = match_score(parsed, row.indexed)
            if score > 0:
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

    # -- topic threads ------------------------------------------------------------------------

    async def upsert_topic_thread(self, thread: TopicThread) -> None:
        self._check()
        self._threads[thread.id] = thread

    async def get_topic_thread(self, thread_id: str) -> TopicThread | None:
        self._check()
        return self._threads.get(thread_id)

    async def list_topic_threads(
        self,
        *,
        statuses: Collection[TopicThreadStatus] | None = None,
        chat_id: str | None = None,
        limit: int | None = None,
    ) -> list[TopicThread]:
        self._check()
        found = [
            t
            for t in self._threads.values()
            if (statuses is None or t.status in statuses) and (chat_id is None or chat_id in t.chat_ids)
        ]
        found.sort(key=lambda t: (t.updated_at, t.id), reverse=True)
        return found[:limit] if limit is not None else found

    # -- sessions and transcripts -------------------------------------------------------------

    async def upsert_session(self, session: Session) -> None:
        self._check()
        self._sessions[session.id] = session

    async def get_session(self, session_id: str) -> Session | None:
        self._check()
        return self._sessions.get(session_id)

    async def list_sessions(
        self,
        *,
        topic_thread_id: str | None = None,
        chat_id: str | None = None,
        states: Collection[SessionState] | None = None,
        limit: int | None = None,
    ) -> list[Session]:
        self._check()
        found = [
            s
            for s in self._sessions.values()
            if (topic_thread_id is None or s.topic_thread_id == topic_thread_id)
            and (chat_id is None or s.chat_id == chat_id)
            and (states is None or s.state in states)
        ]
        found.sort(key=lambda s: (s.updated_at, s.id), reverse=True)
        return found[:limit] if limit is not None else found

    async def save_transcript(self, archive: TranscriptArchive) -> None:
        self._check()
        self._transcripts[archive.session_id] = archive

    async def get_transcript(self, session_id: str) -> TranscriptArchive | None:
        self._check()
        return self._transcripts.get(session_id)

    # -- handoffs -------------------------------------------------------------------------------

    async def save_handoff(self, handoff: Handoff) -> None:
        self._check()
        old = self._handoffs.get(handoff.id)
        self._handoffs[handoff.id] = (old[0] if old else next(self._seq), handoff)

    async def get_handoff(self, handoff_id: str) -> Handoff | None:
        self._check()
        found = self._handoffs.get(handoff_id)
        return found[1] if found else None

    async def list_handoffs(self, topic_thread_id: str, *, limit: int = 10) -> list[Handoff]:
        self._check()
        found = [(seq, h) for seq, h in self._handoffs.values() if h.topic_thread_id == topic_thread_id]
        found.sort(key=lambda p: (p[1].created_at, p[0]), reverse=True)
        return [h for _, h in found[:limit]]

    async def latest_handoff(self, topic_thread_id: str) -> Handoff | None:
        found = await self.list_handoffs(topic_thread_id, limit=1)
        return found[0] if found else None

    # -- tasks --------------------------------------------------------------------------------

    async def upsert_task(self, task: Task) -> None:
        self._check()
        self._tasks[task.id] = task

    async def get_task(self, task_id: str) -> Task | None:
        self._check()
        return self._tasks.get(task_id)

    async def list_tasks(
        self,
        *,
        topic_thread_id: str | None = None,
        statuses: Collection[TaskStatus] | None = None,
        limit: int | None = None,
    ) -> list[Task]:
        self._check()
        found = [
            t
            for t in self._tasks.values()
            if (topic_thread_id is None or t.topic_thread_id == topic_thread_id)
            and (statuses is None or t.status in statuses)
        ]
        found.sort(key=lambda t: (t.updated_at, t.id), reverse=True)
        return found[:limit] if limit is not None else found

    # -- memories -------------------------------------------------------------------------------

    async def upsert_memory(self, memory: Memory) -> None:
        self._check()
        self._memories[memory.id] = (memory, index_text(memory.content))

    async def get_memory(self, memory_id: str) -> Memory | None:
        self._check()
        found = self._memories.get(memory_id)
        return found[0] if found else None

    async def delete_memory(self, memory_id: str) -> bool:
        self._check()
        return self._memories.pop(memory_id, None) is not None

    def _in_scopes(self, scopes: Collection[MemoryScope]) -> list[tuple[Memory, IndexedText]]:
        allowed = {(str(kind), ident) for kind, ident in scopes}
        return [p for p in self._memories.values() if (str(p[0].scope_type), p[0].scope_id) in allowed]

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
        wanted_tags = set(tags) if tags is not None else None
        found = [
            m
            for m, _ in self._in_scopes(scopes)
            if (memory_types is None or m.memory_type in memory_types)
            and (wanted_tags is None or wanted_tags.intersection(m.tags))
            and (since is None or m.created_at >= since)
            and (min_importance is None or m.importance >= min_importance)
        ]
        found.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        return found[:limit] if limit is not None else found

    async def search_memories(
        self, query: str, *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[MemoryHit]:
        self._check()
        parsed = parse_query(query)
        if parsed.empty or limit <= 0:
            return []
        hits = [(match_score(parsed, idx), m) for m, idx in self._in_scopes(scopes)]
        hits = [h for h in hits if h[0] > 0]
        hits.sort(key=lambda h: (-h[0], -h[1].importance, h[1].id))
        return [MemoryHit(m, s) for s, m in hits[:limit]]

    async def save_memory_vector(self, memory_id: str, data: bytes, *, model: str | None = None) -> None:
        self._check()
        found = self._memories.get(memory_id)
        if found:
            self._memories[memory_id] = (replace(found[0], embedding=data, embedding_model=model), found[1])

    async def load_memory_vectors(
        self, *, scopes: Collection[MemoryScope], model: str | None = None
    ) -> list[MemoryVector]:
        self._check()
        return [
            MemoryVector(m.id, m.scope_type, m.scope_id, m.embedding_model, m.embedding)
            for m, _ in sorted(self._in_scopes(scopes), key=lambda p: p[0].id)
            if m.embedding is not None and (model is None or m.embedding_model == model)
        ]

    async def count_memories(self) -> int:
        self._check()
        return len(self._memories)

    # -- memory layer -----------------------------------------------------------------------------

    async def upsert_memory_summary(self, summary: MemorySummary) -> None:
        self._check()
        self._summaries[summary.conversation] = summary

    async def get_memory_summary(self, conversation: str) -> MemorySummary | None:
        self._check()
        return self._summaries.get(conversation)

    async def list_memory_summaries(self) -> list[MemorySummary]:
        self._check()
        return [self._summaries[k] for k in sorted(self._summaries)]

    async def add_token_usage(
        self, chat_id: str, day: str, *, prompt_tokens: int, completion_tokens: int, calls: int = 1
    ) -> TokenUsage:
        self._check()
        old = self._usage.get((chat_id, day), TokenUsage(chat_id, day))
        new = TokenUsage(
            chat_id,
            day,
            old.prompt_tokens + prompt_tokens,
            old.completion_tokens + completion_tokens,
            old.calls + calls,
        )
        self._usage[(chat_id, day)] = new
        return new

    async def get_token_usage(self, chat_id: str, day: str) -> TokenUsage:
        self._check()
        return self._usage.get((chat_id, day), TokenUsage(chat_id, day))

    async def list_token_usage(
        self, *, day: str | None = None, chat_id: str | None = None
    ) -> list[TokenUsage]:
        self._check()
        return [
            u
            for key, u in sorted(self._usage.items())
            if (day is None or u.day == day) and (chat_id is None or u.chat_id == chat_id)
        ]

    async def upsert_user_profile(self, profile: UserProfile) -> None:
        self._check()
        self._profiles[profile.user_id] = profile

    async def get_user_profile(self, user_id: str) -> UserProfile | None:
        self._check()
        return self._profiles.get(user_id)

    async def get_user_profiles(self, user_ids: Sequence[str]) -> Mapping[str, UserProfile]:
        self._check()
        return {uid: self._profiles[uid] for uid in user_ids if uid in self._profiles}

    # -- episodes and tool calls ----------------------------------------------------------------

    async def save_episode(self, episode: EpisodeRecord) -> None:
        self._check()
        if episode.steps:
            self._steps[episode.id] = {s.index: s for s in episode.steps}
        self._episodes[episode.id] = replace(episode, steps=())

    async def append_episode_step(self, step: EpisodeStep) -> None:
        self._check()
        self._steps[step.episode_id][step.index] = step

    async def get_episode(self, episode_id: str) -> EpisodeRecord | None:
        self._check()
        episode = self._episodes.get(episode_id)
        if episode is None:
            return None
        steps = self._steps.get(episode_id, {})
        return replace(episode, steps=tuple(steps[i] for i in sorted(steps)))

    async def list_episodes(self, *, chat_id: str | None = None, limit: int = 20) -> list[EpisodeRecord]:
        self._check()
        found = [e for e in self._episodes.values() if chat_id is None or e.chat_id == chat_id]
        found.sort(key=lambda e: (e.started_at, e.id), reverse=True)
        return found[:limit]

    async def save_tool_call(self, call: ToolCallRecord) -> None:
        await self.write([call])

    async def list_tool_calls(
        self, *, episode_id: str | None = None, chat_id: str | None = None, limit: int = 50
    ) -> list[ToolCallRecord]:
        self._check()
        found = [
            (seq, c)
            for seq, c in self._tool_calls.values()
            if (episode_id is None or c.episode_id == episode_id)
            and (chat_id is None or c.chat_id == chat_id)
        ]
        found.sort(key=lambda p: (p[1].started_at, p[0]))
        return [c for _, c in found[-limit:]] if limit > 0 else []

    # -- restoration ----------------------------------------------------------------------------

    async def load_runtime_state(
        self, *, now: float, policy: RestorePolicy = DEFAULT_RESTORE
    ) -> RuntimeState:
        self._check()
        return await load_runtime_state(self, now=now, policy=policy)
