"""RetrievalEngine: the few pieces of history worth putting in front of the model (design/000 §10).

Sources, each giving candidates with a confidence in 0..1:

- **direct association** — this topic thread's concluded tasks (what was decided), its thread-scoped
  memories, its own earlier messages;
- **structured filters** — memories by type, tags, time and importance, when the caller asks;
- **full-text search** — memories and this chat's messages (not those of another conversation still
  going on beside this one; the best of a word's newest ``message_window`` matches, so a common word
  in a long history costs a window of its matches, not all of them), through the store's jieba index.
  The input is cut into content words and each of the longest few is searched on its own, so a long question
  still finds a memory that shares only some of its words (the memories' searches are one statement);
  a candidate's confidence grows with the share of the input's words it covers;
- **embeddings** — when an :class:`Embedder` is configured: cosine similarity in numpy over the
  stored vectors of the allowed scopes (this Python's SQLite cannot load a vector extension).

The best ``max_items`` (2–5, design/000 §10.4) above ``min_confidence`` are kept; fewer when fewer are
relevant — never padded. The latest handoff and the vision are slots of their own, not retrieved here.

Scope: memories never cross chats unless their scope says so. A query in chat C of topic thread T sees
identity and SOP memories (global), C's chat memories, T's thread memories, the memories of T's tasks,
and a user's own memories only in that user's private chat. Messages are searched in C only.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import structlog

from runtime.context._gather import gather
from runtime.context.lexical import by_rarity, lexical_score, query_terms
from runtime.context.packet import RetrievedSlot
from runtime.kernel.message import SENT_ELSEWHERE_LABEL, ChatKey
from runtime.store.records import Memory, MemoryHit, MessageHit, ScopeType, StoredMessage, Task
from runtime.store.roles import MemoryScope, RecallRows

__all__ = [
    "Embedder",
    "RetrievalEngine",
    "RetrievalQuery",
    "RetrievalSettings",
    "RetrievalStatistics",
    "memory_scopes",
]

log = structlog.get_logger("greywind.context")

_CONTENT_CHARS = 240


class Embedder(Protocol):
    """The embeddings endpoint: one vector per text, in order."""

    async def embed(self, texts: Sequence[str]) -> list[Sequence[float]]: ...


@dataclass(frozen=True, slots=True)
class RetrievalQuery:
    """One retrieval. ``exclude_message_ids`` are already in the packet (the session's dialogue);
    ``new_topic``: the topic thread was made by this very turn, so nothing is stored under it yet."""

    chat_id: str
    text: str
    now: float | None = None
    conversation_thread_id: str | None = None
    topic_thread_id: str | None = None
    sender_id: str | None = None
    exclude_message_ids: frozenset[str] = frozenset()
    memory_types: tuple[str, ...] | None = None
    tags: tuple[str, ...] | None = None
    since: float | None = None
    min_importance: float | None = None
    new_topic: bool = False


@dataclass(frozen=True, slots=True)
class RetrievalSettings:
    max_items: int = 5
    min_confidence: float = 0.15
    per_source: int = 6
    # Words searched one by one: each is a full-text query, and message searches cost the most.
    keywords_max: int = 3
    message_keywords_max: int = 1
    # A message search ranks the chat's newest this many matches of its word, not all of them: a
    # common word in a long history (8,000 matches in a chat of 100,000 messages) cost 45 ms an @.
    message_window: int = 200
    embedding_model: str | None = None
    min_cosine: float = 0.3
    # The stored vectors are kept as one matrix; reloaded when memories are added or this old (vectors
    # attached later to existing memories do not change the count).
    vector_cache_seconds: float = 60.0
    # Messages of *other* conversations younger than this are left out: a conversation going on beside
    # this one is not "history", and two conversations in one group must not leak into each other.
    fresh_window: float = 1_800.0
    # The persona's name: the bot's own past messages are labelled "<name>自己".
    self_name: str = ""

    def __post_init__(self) -> None:
        if not 2 <= self.max_items <= 5:
            raise ValueError(f"max_items must be 2..5 (design/000 §10.4), got {self.max_items}")


@dataclass(frozen=True, slots=True)
class RetrievalStatistics:
    queries: int
    items_returned: int
    by_source: tuple[tuple[str, int], ...]
    embed_failures: int


def memory_scopes(
    chat_id: str, *, topic_thread_id: str | None, sender_id: str | None, task_ids: Sequence[str] = ()
) -> tuple[MemoryScope, ...]:
    """The memory scopes a turn in ``chat_id`` may see (see the module docstring)."""
    scopes: list[MemoryScope] = [(ScopeType.IDENTITY, ""), (ScopeType.SOP, ""), (ScopeType.CHAT, chat_id)]
    if topic_thread_id is not None:
        scopes.append((ScopeType.THREAD, topic_thread_id))
    scopes.extend((ScopeType.TASK, task_id) for task_id in task_ids)
    if sender_id is not None and _private_with(chat_id, sender_id):
        scopes.append((ScopeType.USER, sender_id))
    return tuple(scopes)


def _private_with(chat_id: str, user_id: str) -> bool:
    try:
        key = ChatKey.parse(chat_id)
    except ValueError:
        return False
    return key.is_private and key.ident == user_id


@dataclass(slots=True)
class _Candidate:
    slot: RetrievedSlot
    source: str


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _CONTENT_CHARS else text[: _CONTENT_CHARS - 1] + "…"


def _keywords(terms: tuple[str, ...], limit: int) -> tuple[str, ...]:
    """The rarest few content words (the most telling, and the cheapest to search); one-character words
    only when there is nothing longer."""
    longer = [t for t in terms if len(t) >= 2]
    return by_rarity(longer or terms)[:limit]


def _coverage(keywords: tuple[str, ...], matched: set[str]) -> float:
    total = sum(min(len(k), 4) for k in keywords)
    return sum(min(len(k), 4) for k in keywords if k in matched) / total if total else 0.0


class RetrievalEngine:
    """Selects 2–5 relevant pieces of history for a packet, inside the turn's scopes."""

    __slots__ = (
        "_by_source",
        "_embed_failures",
        "_embedder",
        "_items",
        "_queries",
        "_settings",
        "_store",
        "_vectors",
    )

    def __init__(
        self,
        store: RecallRows,
        *,
        settings: RetrievalSettings | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self._store = store
        self._settings = settings or RetrievalSettings()
        self._embedder = embedder
        self._queries = 0
        self._items = 0
        self._by_source: Counter[str] = Counter()
        self._embed_failures = 0
        # Stored vectors as one matrix per scope set: (memory count, loaded at, ids, unit rows).
        self._vectors: dict[tuple[MemoryScope, ...], tuple[int, float, list[str], np.ndarray]] = {}

    async def retrieve(
        self, query: RetrievalQuery, *, tasks_of: Callable[[], Awaitable[Sequence[Task]]] | None = None
    ) -> tuple[RetrievedSlot, ...]:
        """The best items for ``query``; ``tasks_of`` gives the topic thread's tasks when the caller
        reads them anyway (else they are read here, the latest 20)."""
        cfg = self._settings
        self._queries += 1
        terms = query_terms(query.text)
        keywords = _keywords(terms, cfg.keywords_max)
        filtered = any(
            f is not None for f in (query.memory_types, query.tags, query.since, query.min_importance)
        )

        async def scoped() -> tuple[Sequence[Task], tuple[MemoryScope, ...], list[list[MemoryHit]]]:
            """The thread's tasks (their memories are in scope), then the memories' search."""
            tasks: Sequence[Task] = ()
            if tasks_of is not None:
                tasks = await tasks_of()
            elif query.topic_thread_id:
                tasks = await self._store.list_tasks(topic_thread_id=query.topic_thread_id, limit=20)
            scopes = memory_scopes(
                query.chat_id,
                topic_thread_id=query.topic_thread_id,
                sender_id=query.sender_id,
                task_ids=[t.id for t in tasks],
            )
            hits = (
                await self._store.search_memories_each(keywords, scopes=scopes, limit=cfg.per_source)
                if keywords
                else []
            )
            return tasks, scopes, hits

        # The reads that need no scope go on beside the tasks and the search that need them.
        reads: list[Callable[[], Awaitable[Any]]] = [scoped]
        if keywords:
            reads.append(functools.partial(self._message_hits, query, keywords))
        # The thread's important memories, whatever the words (a thread this turn made has none).
        important = None if filtered or query.new_topic else query.topic_thread_id
        if important is not None:
            reads.append(functools.partial(self._important, important))
        results = await gather(reads)
        tasks, scopes, memory_hits = results[0]
        found: dict[tuple[str, str], _Candidate] = {}

        def offer(slot: RetrievedSlot, source: str) -> None:
            key = (slot.source_type, slot.source_id)
            old = found.get(key)
            if old is None or slot.confidence > old.slot.confidence:
                found[key] = _Candidate(slot, source)

        if keywords:
            self._offer_memories(query, keywords, memory_hits, offer)
            self._offer_messages(query, keywords, results[1], offer)
        for task in tasks:
            if task.conclusion:
                text = f"{task.title}：{task.conclusion}"
                cover = lexical_score(terms, text.lower(), frozenset(query_terms(text))) if terms else 0.0
                offer(
                    RetrievedSlot(
                        "task", task.id, "本线程任务的结论", _clip(text), round(0.4 + 0.5 * cover, 3)
                    ),
                    "task",
                )
        if filtered:
            memories = await self._store.list_memories(
                scopes=scopes,
                memory_types=query.memory_types,
                tags=query.tags,
                since=query.since,
                min_importance=query.min_importance,
                limit=cfg.per_source,
            )
            self._offer_listed(memories, "按类型/标签/时间/重要度筛选", terms, offer)
        elif important is not None:
            self._offer_listed(results[-1], "本线程的重要记忆", terms, offer)
        if self._embedder is not None and query.text.strip():
            await self._by_embedding(query, scopes, offer)

        ranked = sorted(
            found.values(), key=lambda c: (-c.slot.confidence, c.slot.source_type, c.slot.source_id)
        )
        chosen: list[_Candidate] = []
        seen_content: set[str] = set()
        for candidate in ranked:
            if candidate.slot.confidence < cfg.min_confidence or candidate.slot.content in seen_content:
                continue
            seen_content.add(candidate.slot.content)
            chosen.append(candidate)
            if len(chosen) == cfg.max_items:
                break
        self._items += len(chosen)
        self._by_source.update(c.source for c in chosen)
        return tuple(c.slot for c in chosen)

    def _offer_memories(
        self,
        query: RetrievalQuery,
        keywords: tuple[str, ...],
        results: list[list[MemoryHit]],
        offer: _Offer,
    ) -> None:
        matched: dict[str, set[str]] = {}
        memories: dict[str, Memory] = {}
        for keyword, hits in zip(keywords, results, strict=True):
            for hit in hits:
                matched.setdefault(hit.memory.id, set()).add(keyword)
                memories[hit.memory.id] = hit.memory
        for memory_id, words in matched.items():
            memory = memories[memory_id]
            direct = memory.scope_type is ScopeType.THREAD and memory.scope_id == query.topic_thread_id
            confidence = 0.3 + 0.55 * _coverage(keywords, words) + 0.1 * min(max(memory.importance, 0.0), 1.0)
            confidence += 0.05 if direct else 0.0
            where = "本线程记忆" if direct else f"{memory.scope_type.value} 记忆"
            reason = f"{where}，含“{'、'.join(sorted(words))}”"
            offer(
                RetrievedSlot(
                    memory.memory_type,
                    memory.id,
                    reason,
                    _clip(memory.content),
                    round(min(confidence, 1.0), 3),
                ),
                "memory",
            )

    async def _message_hits(self, query: RetrievalQuery, keywords: tuple[str, ...]) -> list[list[MessageHit]]:
        searched = keywords[: self._settings.message_keywords_max]
        limit = self._settings.per_source
        chats = (query.chat_id,)
        window = self._settings.message_window
        return await gather(
            [
                functools.partial(self._store.search_messages, k, chat_ids=chats, limit=limit, newest=window)
                for k in searched
            ]
        )

    def _offer_messages(
        self,
        query: RetrievalQuery,
        keywords: tuple[str, ...],
        results: list[list[MessageHit]],
        offer: _Offer,
    ) -> None:
        matched: dict[str, set[str]] = {}
        messages: dict[str, StoredMessage] = {}
        searched = keywords[: self._settings.message_keywords_max]
        for keyword, hits in zip(searched, results, strict=True):
            for hit in hits:
                message = hit.message
                if message.message_id in query.exclude_message_ids or message.chat_id != query.chat_id:
                    continue
                if self._beside(query, message):
                    continue
                matched.setdefault(message.message_id, set()).add(keyword)
                messages[message.message_id] = message
        for message_id, words in matched.items():
            message = messages[message_id]
            same_topic = (
                query.topic_thread_id is not None and message.topic_thread_id == query.topic_thread_id
            )
            confidence = 0.25 + 0.5 * _coverage(searched, words) + (0.1 if same_topic else 0.0)
            speaker = message.sender_name or message.sender_id
            if message.sent_elsewhere:
                speaker = f"{SENT_ELSEWHERE_LABEL} {speaker}"
            elif message.from_self:
                speaker = f"{self._settings.self_name}自己"
            reason = f"{'本线程' if same_topic else '本群'}的历史消息，含“{'、'.join(sorted(words))}”"
            offer(
                RetrievedSlot(
                    "message",
                    f"{message.chat_id}/{message_id}",
                    reason,
                    _clip(f"{speaker}: {message.text}"),
                    round(confidence, 3),
                ),
                "message",
            )

    def _beside(self, query: RetrievalQuery, message: StoredMessage) -> bool:
        """A message of another conversation that is still going on (or only just ended)."""
        if (
            query.now is None
            or message.thread_id is None
            or message.thread_id == query.conversation_thread_id
        ):
            return False
        return query.now - message.time < self._settings.fresh_window

    async def _important(self, topic_thread_id: str) -> list[Memory]:
        return await self._store.list_memories(
            scopes=[(ScopeType.THREAD, topic_thread_id)],
            min_importance=0.7,
            limit=self._settings.per_source,
        )

    @staticmethod
    def _offer_listed(memories: Sequence[Memory], reason: str, terms: tuple[str, ...], offer: _Offer) -> None:
        for memory in memories:
            cover = (
                lexical_score(terms, memory.content.lower(), frozenset(query_terms(memory.content)))
                if terms
                else 0.0
            )
            confidence = 0.3 + 0.3 * min(max(memory.importance, 0.0), 1.0) + 0.3 * cover
            offer(
                RetrievedSlot(
                    memory.memory_type, memory.id, reason, _clip(memory.content), round(confidence, 3)
                ),
                "filter",
            )

    async def _by_embedding(
        self, query: RetrievalQuery, scopes: tuple[MemoryScope, ...], offer: _Offer
    ) -> None:
        assert self._embedder is not None
        try:
            vectors = await self._embedder.embed([query.text])
            probe = np.asarray(vectors[0], dtype=np.float32)
        except Exception as exc:  # a failing endpoint costs the semantic layer, not the packet
            self._embed_failures += 1
            log.warning("retrieval_embed_failed", chat_id=query.chat_id, error=repr(exc))
            return
        ids, matrix = await self._matrix(scopes)
        if not ids or matrix.shape[1] != probe.shape[0]:
            return
        norm = float(np.linalg.norm(probe)) or 1.0
        cosines = matrix @ (probe / norm)
        top = np.argsort(-cosines)[: self._settings.per_source]
        for index in top:
            cosine = float(cosines[index])
            if cosine < self._settings.min_cosine:
                break
            memory = await self._store.get_memory(ids[index])
            if memory is not None:
                offer(
                    RetrievedSlot(
                        memory.memory_type,
                        memory.id,
                        f"语义相近（余弦 {cosine:.2f}）",
                        _clip(memory.content),
                        round(cosine, 3),
                    ),
                    "embedding",
                )

    async def _matrix(self, scopes: tuple[MemoryScope, ...]) -> tuple[list[str], np.ndarray]:
        version = await self._store.count_memories()
        cached = self._vectors.get(scopes)
        fresh = cached is not None and time.monotonic() - cached[1] < self._settings.vector_cache_seconds
        if cached is not None and cached[0] == version and fresh:
            return cached[2], cached[3]
        rows = await self._store.load_memory_vectors(scopes=scopes, model=self._settings.embedding_model)
        ids: list[str] = []
        arrays: list[np.ndarray] = []
        for row in rows:
            vector = np.frombuffer(row.data, dtype="<f4")
            if arrays and vector.shape != arrays[0].shape:
                continue  # a vector from another model's dimension
            ids.append(row.memory_id)
            arrays.append(vector)
        if arrays:
            matrix = np.vstack(arrays).astype(np.float32)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix = (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)
        else:
            matrix = np.zeros((0, 0), dtype=np.float32)
        if len(self._vectors) > 64:
            self._vectors.clear()
        self._vectors[scopes] = (version, time.monotonic(), ids, matrix)
        return ids, matrix

    def statistics(self) -> RetrievalStatistics:
        return RetrievalStatistics(
            queries=self._queries,
            items_returned=self._items,
            by_source=tuple(sorted(self._by_source.items())),
            embed_failures=self._embed_failures,
        )


class _Offer(Protocol):
    def __call__(self, slot: RetrievedSlot, source: str) -> None: ...
