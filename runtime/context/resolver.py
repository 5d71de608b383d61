"""ThreadResolver: which long-lived topic thread an input belongs to (design/000 §7).

Rules, first match wins:

1. **chatter** — greetings, laughter, one-word acknowledgements go to the chat's *casual* thread, never
   to a work thread (§7.5: chatter wrongly bound to a task thread), whatever else holds;
2. **binding** — a chat explicitly bound to topic threads (:meth:`ThreadResolver.bind`) uses them (the
   best lexical match among several, else the most recently active);
3. **conversation** — the input's conversation thread (the kernel's reply chain) already belongs to a
   topic thread: go on in it, unless the input names another thread outright and shares nothing with
   this one (§7.5: two themes sharing one thread);
4. **continuation** — "继续", "接着", "上次…": the chat's most recently active work thread, however long
   ago (after a restart too — it is read from the store, never a default);
5. **recent** — the chat's most recently active work thread, if active within
   ``thread_continuation`` seconds and the input shares words with it at least as much as with any
   other thread;
6. **lexical** — the best thread whose title, tags, goals and open tasks cover at least
   ``match_threshold`` of the input's content words;
7. **new** — a new thread titled from the input. Auto-created threads carry no vision: a vision is the
   user's stated intent, set when a thread is created on purpose (:meth:`ThreadResolver.create`).

Topic threads live in one or more chats (``TopicThread.chat_ids``) and only those chats see them, so
nothing crosses chats. Explicit bindings are ``extra["bound_chat_ids"]``. The resolver keeps no state
of its own: everything is read from the store on each call, so a restart changes nothing.

A thread's open tasks are among the words it is matched on; where they were read for the thread this
input went to, the :class:`Resolution` carries them (the latest :data:`THREAD_TASKS`), and the packet's
thread slot shows them without a second read.
"""

from __future__ import annotations

import functools
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from runtime.context.deferred import DeferredWrites, write
from runtime.context.errors import UnknownTopicThreadError
from runtime.context.lexical import is_chatter, lexical_score, query_terms, strip_names, wants_continuation
from runtime.kernel.ids import IdFactory, counter_ids
from runtime.store.records import Task, TopicLink, TopicThread, TopicThreadStatus
from runtime.store.roles import ConversationWrites
from runtime.store.text import parse_query

__all__ = [
    "CASUAL",
    "THREAD_TASKS",
    "Resolution",
    "ResolveRule",
    "ResolverSettings",
    "ResolverStatistics",
    "ThreadResolver",
]

#: The ``type`` of a chat's thread for chatter.
CASUAL = "casual"
_LIVE = (TopicThreadStatus.ACTIVE, TopicThreadStatus.DORMANT)
_TITLE_CHARS = 20
# A lexical score this high means the input names the thread outright (its title or a tag).
_NAMED = 0.9
# Conversation threads whose topic the resolver remembers between the store's writer flushes.
_REMEMBERED_CONVERSATIONS = 4096
#: A thread's latest tasks read at once: the thread slot's (and retrieval's); the newest
#: ``_GOAL_TASKS`` of them give the resolver the thread's open goals.
THREAD_TASKS = 20
_GOAL_TASKS = 10


class ResolveRule(StrEnum):
    EXPLICIT = "explicit"  # the caller named the thread (a proactive wake scheduled for it)
    CHATTER = "chatter"
    BINDING = "binding"
    CONVERSATION = "conversation"
    CONTINUATION = "continuation"
    RECENT = "recent"
    LEXICAL = "lexical"
    NEW = "new"
    FALLBACK = "fallback"  # nothing matched and the caller may not open a thread (a proactive cue)


@dataclass(frozen=True, slots=True)
class Resolution:
    """The resolver's verdict: the thread, by which rule, whether it was just made, and why.

    ``tasks``: the thread's latest :data:`THREAD_TASKS` tasks when this resolution read them (else
    ``None``)."""

    thread: TopicThread
    rule: ResolveRule
    created: bool
    score: float
    reason: str
    tasks: tuple[Task, ...] | None = None


@dataclass(frozen=True, slots=True)
class ResolverSettings:
    """``thread_continuation`` in seconds; ``names`` are the bot's names (never a topic)."""

    thread_continuation: float = 900.0
    match_threshold: float = 0.34
    names: tuple[str, ...] = ()
    max_candidates: int = 30


@dataclass(frozen=True, slots=True)
class ResolverStatistics:
    resolved: int
    created: int
    by_rule: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class _Profile:
    haystack: str
    words: frozenset[str]
    named: tuple[str, ...]  # title and tags: naming one of them names the thread


def _bound(thread: TopicThread) -> tuple[str, ...]:
    return tuple(thread.extra.get("bound_chat_ids", ()))


def _derive_title(text: str) -> str:
    title = " ".join(text.split())
    return title if len(title) <= _TITLE_CHARS else title[: _TITLE_CHARS - 1] + "…"


class ThreadResolver:
    """Maps an input (with its chat and conversation thread) onto a topic thread; writes through."""

    __slots__ = (
        "_by_rule",
        "_casual_ids",
        "_conversations",
        "_created",
        "_ids",
        "_link",
        "_profiles",
        "_settings",
        "_store",
    )

    def __init__(
        self,
        store: ConversationWrites,
        *,
        settings: ResolverSettings | None = None,
        ids: IdFactory | None = None,
        link: Callable[[TopicLink], None] | None = None,
    ):
        """``link`` queues message→topic links behind the messages themselves (the store writer's
        ``put``); without it links are written to the store at once."""
        self._store = store
        self._settings = settings or ResolverSettings()
        self._ids = ids or counter_ids()
        self._link = link
        self._conversations: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._casual_ids: dict[str, str] = {}
        self._by_rule: Counter[str] = Counter()
        self._created = 0
        # Lexical profiles keyed by (thread id, updated_at): rebuilt only when the thread changes.
        self._profiles: dict[tuple[str, float], _Profile] = {}

    # -- explicit management -----------------------------------------------------------------------

    async def create(
        self,
        chat_id: str,
        title: str,
        *,
        now: float,
        thread_type: str = "topic",
        summary: str = "",
        tags: tuple[str, ...] = (),
        vision: dict[str, Any] | None = None,
        bind: bool = False,
    ) -> TopicThread:
        """A topic thread made on purpose (admin command, tool), optionally bound to the chat."""
        thread = TopicThread(
            id=self._ids("topic"),
            title=title.strip() or "未命名",
            type=thread_type,
            summary=summary,
            created_at=now,
            updated_at=now,
            vision=dict(vision or {}),
            tags=tags,
            chat_ids=(chat_id,),
            extra={"bound_chat_ids": [chat_id]} if bind else {},
        )
        await self._store.upsert_topic_thread(thread)
        self._created += 1
        return thread

    async def bind(self, chat_id: str, topic_thread_id: str, *, now: float) -> TopicThread:
        """Bind a chat to a thread: its non-chatter input goes there first. The chat then sees the thread."""
        thread = await self._require(topic_thread_id)
        bound = _bound(thread)
        thread = replace(
            thread,
            chat_ids=thread.chat_ids if chat_id in thread.chat_ids else (*thread.chat_ids, chat_id),
            extra={
                **thread.extra,
                "bound_chat_ids": [*bound, chat_id] if chat_id not in bound else list(bound),
            },
            status=TopicThreadStatus.ACTIVE,
            updated_at=now,
        )
        await self._store.upsert_topic_thread(thread)
        return thread

    async def unbind(self, chat_id: str, topic_thread_id: str, *, now: float) -> TopicThread:
        thread = await self._require(topic_thread_id)
        thread = replace(
            thread,
            extra={**thread.extra, "bound_chat_ids": [c for c in _bound(thread) if c != chat_id]},
            updated_at=now,
        )
        await self._store.upsert_topic_thread(thread)
        return thread

    async def update(
        self,
        topic_thread_id: str,
        *,
        now: float,
        title: str | None = None,
        summary: str | None = None,
        tags: tuple[str, ...] | None = None,
        vision: dict[str, Any] | None = None,
    ) -> TopicThread:
        """A maintained thread note (design/000 §6.2): title, summary, tags or vision, set by hand."""
        thread = await self._require(topic_thread_id)
        thread = replace(
            thread,
            title=title.strip() if title and title.strip() else thread.title,
            summary=summary if summary is not None else thread.summary,
            tags=tags if tags is not None else thread.tags,
            vision=dict(vision) if vision is not None else thread.vision,
            updated_at=max(now, thread.updated_at),
        )
        await self._store.upsert_topic_thread(thread)
        return thread

    async def _require(self, topic_thread_id: str) -> TopicThread:
        thread = await self._store.get_topic_thread(topic_thread_id)
        if thread is None:
            raise UnknownTopicThreadError(topic_thread_id)
        return thread

    # -- resolution --------------------------------------------------------------------------------

    async def resolve(
        self,
        chat_id: str,
        text: str,
        *,
        now: float,
        conversation_thread_id: str | None = None,
        message_id: str | None = None,
        chat_name: str = "",
        may_create: bool = True,
        writes: DeferredWrites | None = None,
    ) -> Resolution:
        """The topic thread for ``text`` said in ``chat_id``; links ``message_id`` to it when given.

        ``may_create=False`` (a proactive cue: the bot's own words, not a user's new theme) never opens
        a thread: when nothing matches, the chat's casual thread is used (rule ``fallback``). With
        ``writes``, the thread's row is written there, behind the packet."""
        read: dict[str, tuple[Task, ...]] = {}
        resolution = await self._decide(
            chat_id, text, now, conversation_thread_id, chat_name, may_create, writes, read
        )
        thread = resolution.thread
        if thread.id in read:
            resolution = replace(resolution, tasks=read[thread.id])
        if not resolution.created and (
            thread.updated_at < now or thread.status is not TopicThreadStatus.ACTIVE
        ):
            thread = replace(thread, updated_at=max(now, thread.updated_at), status=TopicThreadStatus.ACTIVE)
            await write(writes, "thread", functools.partial(self._store.upsert_topic_thread, thread))
            resolution = replace(resolution, thread=thread)
        if message_id is not None:
            link = TopicLink(chat_id, (message_id,), thread.id)
            if self._link is not None:
                self._link(link)
            else:
                await self._store.write([link])
        if conversation_thread_id is not None and thread.type != CASUAL:
            key = (chat_id, conversation_thread_id)
            self._conversations[key] = thread.id
            self._conversations.move_to_end(key)
            if len(self._conversations) > _REMEMBERED_CONVERSATIONS:
                self._conversations.popitem(last=False)
        self._by_rule[resolution.rule.value] += 1
        return resolution

    async def topic_of(self, chat_id: str, conversation_thread_id: str | None = None) -> str | None:
        """The work thread a conversation was resolved to, else the chat's most recently active one."""
        threads = await self._store.list_topic_threads(statuses=_LIVE, chat_id=chat_id)
        work = [t for t in threads if t.type != CASUAL]
        if conversation_thread_id is not None:
            linked = await self._conversation_topic(conversation_thread_id, chat_id, work)
            if linked is not None:
                return linked.id
        return work[0].id if work else None

    async def explicit(
        self, thread: TopicThread, *, now: float, writes: DeferredWrites | None = None
    ) -> Resolution:
        """The caller already knows the thread (a wake scheduled for it): mark it active and count it."""
        if thread.updated_at < now or thread.status is not TopicThreadStatus.ACTIVE:
            thread = replace(thread, updated_at=max(now, thread.updated_at), status=TopicThreadStatus.ACTIVE)
            await write(writes, "thread", functools.partial(self._store.upsert_topic_thread, thread))
        self._by_rule[ResolveRule.EXPLICIT.value] += 1
        return Resolution(thread, ResolveRule.EXPLICIT, False, 1.0, "named by the caller")

    async def _decide(
        self,
        chat_id: str,
        text: str,
        now: float,
        conversation_thread_id: str | None,
        chat_name: str,
        may_create: bool = True,
        writes: DeferredWrites | None = None,
        read: dict[str, tuple[Task, ...]] | None = None,
    ) -> Resolution:
        cleaned = strip_names(text, self._settings.names)
        if is_chatter(cleaned):
            return await self._casual(chat_id, now, chat_name, writes)

        threads = await self._store.list_topic_threads(
            statuses=_LIVE, chat_id=chat_id, limit=self._settings.max_candidates
        )
        work = [t for t in threads if t.type != CASUAL]
        terms = query_terms(cleaned)
        scores = {t.id: await self._score(t, terms, read) for t in work}

        bound = [t for t in work if chat_id in _bound(t)]
        if bound:
            best = max(bound, key=lambda t: (scores[t.id], t.updated_at))
            return Resolution(best, ResolveRule.BINDING, False, scores[best.id], f"chat bound to {best.id}")

        best_other = max(work, key=lambda t: (scores[t.id], t.updated_at), default=None)
        linked = await self._conversation_topic(conversation_thread_id, chat_id, work)
        if linked is not None:
            named_elsewhere = (
                best_other is not None
                and best_other.id != linked.id
                and scores[best_other.id] >= _NAMED
                and scores[linked.id] == 0.0
            )
            if not named_elsewhere:
                return Resolution(
                    linked, ResolveRule.CONVERSATION, False, scores[linked.id], "conversation already in it"
                )

        if wants_continuation(cleaned):
            if not work:  # nothing to go on with: "继续" is no theme of its own
                return await self._casual(chat_id, now, chat_name, writes)
            latest = work[0]  # the store lists most recently updated first
            return Resolution(latest, ResolveRule.CONTINUATION, False, scores[latest.id], "asked to go on")

        if work and best_other is not None:
            latest = work[0]
            fresh = now - latest.updated_at <= self._settings.thread_continuation
            if fresh and scores[latest.id] > 0.0 and scores[latest.id] >= scores[best_other.id]:
                return Resolution(
                    latest, ResolveRule.RECENT, False, scores[latest.id], "recent thread, shared words"
                )
            if scores[best_other.id] >= self._settings.match_threshold:
                return Resolution(
                    best_other, ResolveRule.LEXICAL, False, scores[best_other.id], "title/tags/goals match"
                )

        if not may_create:
            casual = await self._casual(chat_id, now, chat_name, writes)
            return replace(casual, rule=ResolveRule.FALLBACK, reason="no thread matched; not a user's theme")
        return await self._new(chat_id, cleaned, now, writes)

    async def _conversation_topic(
        self, conversation_thread_id: str | None, chat_id: str, work: list[TopicThread]
    ) -> TopicThread | None:
        if conversation_thread_id is None or not work:  # no thread it could be in: nothing to read
            return None
        allowed = {t.id: t for t in work}
        remembered = self._conversations.get((chat_id, conversation_thread_id))
        if remembered in allowed:
            return allowed[remembered]
        messages = await self._store.conversation_messages(conversation_thread_id, limit=20)
        for message in reversed(messages):
            if message.chat_id == chat_id and message.topic_thread_id in allowed:
                return allowed[message.topic_thread_id]
        return None

    async def _score(
        self, thread: TopicThread, terms: tuple[str, ...], read: dict[str, tuple[Task, ...]] | None = None
    ) -> float:
        if not terms:
            return 0.0
        profile = await self._profile(thread, read)
        lowered = " ".join(terms)
        if any(len(name) >= 2 and name in lowered for name in profile.named):
            return 1.0
        return lexical_score(terms, profile.haystack, profile.words)

    async def _profile(
        self, thread: TopicThread, read: dict[str, tuple[Task, ...]] | None = None
    ) -> _Profile:
        """``read`` collects the tasks read on the way, by thread."""
        # A task change touches its thread (TaskBook), so (id, updated_at) keys the open tasks too.
        key = (thread.id, thread.updated_at)
        profile = self._profiles.get(key)
        if profile is None:
            tasks = tuple(await self._store.list_tasks(topic_thread_id=thread.id, limit=THREAD_TASKS))
            if read is not None:
                read[thread.id] = tasks
            goals = tuple(t.title for t in tasks[:_GOAL_TASKS] if t.conclusion is None)
            vision = thread.vision or {}
            done_when = vision.get("done_when") or []
            parts = [
                thread.title,
                *thread.tags,
                str(vision.get("origin_goal") or ""),
                *map(str, done_when),
                *goals,
            ]
            haystack = " ".join(parts).lower()
            query = parse_query(haystack) if haystack.strip() else None
            words = frozenset(query.words) if query else frozenset()
            named = tuple(n.lower() for n in (thread.title, *thread.tags) if n)
            profile = _Profile(haystack, words, named)
            if len(self._profiles) > 4096:
                self._profiles.clear()
            self._profiles[key] = profile
        return profile

    async def _casual(
        self, chat_id: str, now: float, chat_name: str, writes: DeferredWrites | None = None
    ) -> Resolution:
        known = self._casual_ids.get(chat_id)
        found = await self._store.get_topic_thread(known) if known is not None else None
        if found is None:
            # Once per chat and process: a chat's threads can be many, its casual thread is one.
            threads = await self._store.list_topic_threads(chat_id=chat_id)
            found = next((t for t in threads if t.type == CASUAL), None)
        if found is not None:
            self._casual_ids[chat_id] = found.id
            return Resolution(found, ResolveRule.CHATTER, False, 0.0, "chatter: the chat's casual thread")
        thread = TopicThread(
            id=self._ids("topic"),
            title=f"{chat_name or chat_id}·闲聊",
            type=CASUAL,
            summary="群聊里的日常闲聊",
            created_at=now,
            updated_at=now,
            chat_ids=(chat_id,),
        )
        await write(writes, "thread", functools.partial(self._store.upsert_topic_thread, thread))
        self._casual_ids[chat_id] = thread.id
        self._created += 1
        return Resolution(thread, ResolveRule.CHATTER, True, 0.0, "chatter: new casual thread")

    async def _new(
        self, chat_id: str, text: str, now: float, writes: DeferredWrites | None = None
    ) -> Resolution:
        terms = sorted(query_terms(text), key=len, reverse=True)
        thread = TopicThread(
            id=self._ids("topic"),
            title=_derive_title(text) or "未命名",
            type="topic",
            summary="",
            created_at=now,
            updated_at=now,
            tags=tuple(t for t in terms if len(t) >= 2)[:3],
            chat_ids=(chat_id,),
            extra={"origin": "resolver", "origin_text": text[:200]},
        )
        await write(writes, "thread", functools.partial(self._store.upsert_topic_thread, thread))
        self._created += 1
        return Resolution(thread, ResolveRule.NEW, True, 0.0, "no thread matched")

    def statistics(self) -> ResolverStatistics:
        return ResolverStatistics(
            resolved=sum(self._by_rule.values()),
            created=self._created,
            by_rule=tuple(sorted(self._by_rule.items())),
        )
