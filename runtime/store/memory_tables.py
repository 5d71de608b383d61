"""The in-memory store's context, memory-layer, episode and tool-call tables (dicts).

A mixin of :class:`runtime.store.memory.MemoryStore`, which owns the lifecycle and the message and
kernel-state tables.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from runtime.store.protocol import MemoryScope
from runtime.store.records import (
    EpisodeRecord,
    EpisodeStep,
    Handoff,
    Memory,
    MemoryHit,
    MemorySummary,
    MemoryVector,
    Session,
    SessionState,
    Task,
    TaskStatus,
    TokenUsage,
    ToolCallRecord,
    TopicThread,
    TopicThreadStatus,
    TranscriptArchive,
    UserProfile,
)
from runtime.store.text import IndexedText, index_text, match_score, parse_query


class MemoryTables:
    _seq: itertools.count[int]

    def _check(self) -> None:
        raise NotImplementedError

    def _init_tables(self) -> None:
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

    async def search_memories_each(
        self, queries: Sequence[str], *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[list[MemoryHit]]:
        return [await self.search_memories(q, scopes=scopes, limit=limit) for q in queries]

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
        self._check()
        old = self._tool_calls.get(call.id)
        self._tool_calls[call.id] = (old[0] if old else next(self._seq), call)

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
