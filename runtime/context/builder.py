"""ContextBuilder: from a triggering message to a ContextPacket (design/000 §4's flow).

    input → topic thread (ThreadResolver) → session (SessionManager; the previous session's handoff
    delivered) → persona → vision → session dialogue → handoff → retrieval → profile, summary → packet

The session slot's dialogue is the triggering message's *conversation* thread (the kernel's reply
chain) and the bot's own turns in it — never everything said in the group, so two conversations in one
group never see each other's words. Nothing is ever read from another chat. Messages the store writer
has not flushed yet come from a :class:`RecentMessages` buffer the edge fills.

Packets are built only for activations that crossed the attention threshold or were forced: the
caller says which (``forced``, ``high``, ``medium``, ``proactive``) and :meth:`ContextBuilder.statistics`
counts them by reason. Failures stay local: a part that fails (retrieval, a profile, the store behind
the resolver) is logged and left out of the packet, which is still built (design/000 §11.4's degradation).

With ``defer_writes`` the build's writes (the topic thread's row, the session's, the user's turn) go on
behind the packet (:mod:`runtime.context.deferred`): the caller sends the model request at once and
calls :meth:`ContextBuilder.settle` before it acts on the answer. A chat's next build waits for its
last one's writes first, so every build reads what the ones before it wrote. Rows the build itself
just decided are not read back: a thread made by this turn has no session, handoff, task or memory
to look up, and the thread's tasks are read once for the thread slot and retrieval together (not at
all when the resolver read them to match the input on the thread).
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol, TypeVar

import structlog

from runtime import stages
from runtime.context._gather import gather, once
from runtime.context.deferred import DeferredWrites
from runtime.context.handoffs import handoff_slot
from runtime.context.packet import (
    ContextPacket,
    DialogueTurn,
    MemorySummarySlot,
    PersonaSlot,
    ScreenContext,
    SessionSlot,
    ThreadSlot,
    UserInputSlot,
    UserProfileSlot,
    VisionSlot,
)
from runtime.context.resolver import THREAD_TASKS, Resolution, ThreadResolver
from runtime.context.retrieval import RetrievalEngine, RetrievalQuery
from runtime.context.sessions import SessionManager, interruption_lines
from runtime.context.tasks import task_lines
from runtime.kernel.message import SENT_ELSEWHERE_LABEL, ChatKey, ChatMessage
from runtime.store.records import Session, StoredMessage, Task, TopicThread
from runtime.store.roles import ConversationRows, MemoryLayerRows

__all__ = [
    "BuildReason",
    "BuilderSettings",
    "BuilderStatistics",
    "BuiltContext",
    "ChatInfo",
    "ContextBuilder",
    "ProfileProvider",
    "RecentBuffer",
    "RecentBufferStatistics",
    "RecentMessages",
    "StoreProfiles",
    "StoreSummaries",
    "SummaryProvider",
]

log = structlog.get_logger("greywind.context")
T = TypeVar("T")


class BuildReason(StrEnum):
    """Why a packet is built: the kernel's decision (``low`` never builds one) or a proactive wake."""

    FORCED = "forced"
    HIGH = "high"
    MEDIUM = "medium"
    PROACTIVE = "proactive"


@dataclass(frozen=True, slots=True)
class ChatInfo:
    """The chat surface: design/000's ``screen_context``."""

    chat_id: str
    surface: str
    name: str = ""
    activity: str | None = None

    @classmethod
    def for_chat(cls, chat_id: str) -> ChatInfo:
        """The surface a chat key names: ``<platform>_<kind>`` (``qq_group``), or the bare kind for an
        unbound chat."""
        key = ChatKey.parse(chat_id)
        return cls(chat_id, f"{key.platform}_{key.kind}" if key.platform else key.kind.value)

    def screen(self) -> ScreenContext:
        return ScreenContext(
            surface=self.surface, chat_id=self.chat_id, chat_name=self.name, activity=self.activity
        )

    def screen_mapping(self) -> dict[str, Any]:
        return {
            "surface": self.surface,
            "chat_id": self.chat_id,
            "chat_name": self.name,
            "activity": self.activity,
        }


def _identity(message: StoredMessage | ChatMessage) -> tuple[str, str, float]:
    return (message.message_id, message.sender_id, message.time)


class RecentMessages(Protocol):
    """Messages seen but perhaps not yet flushed to the store, per chat, oldest first."""

    def recent(self, chat_id: str) -> Sequence[StoredMessage]: ...


@dataclass(frozen=True, slots=True)
class RecentBufferStatistics:
    chats: int
    messages: int
    size: int


class RecentBuffer:
    """A bounded per-chat buffer of the latest messages (incoming and the bot's own), for the builder."""

    __slots__ = ("_by_chat", "_size")

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._by_chat: defaultdict[str, deque[StoredMessage]] = defaultdict(lambda: deque(maxlen=self._size))

    def add(self, message: StoredMessage) -> None:
        self._by_chat[message.chat_id].append(message)

    def recent(self, chat_id: str) -> Sequence[StoredMessage]:
        return tuple(self._by_chat.get(chat_id, ()))

    def statistics(self) -> RecentBufferStatistics:
        return RecentBufferStatistics(
            chats=len(self._by_chat), messages=sum(len(q) for q in self._by_chat.values()), size=self._size
        )


class ProfileProvider(Protocol):
    async def profile(self, user_id: str, chat_id: str) -> UserProfileSlot | None: ...


class SummaryProvider(Protocol):
    async def summary(self, chat_id: str, topic_thread_id: str | None) -> MemorySummarySlot | None: ...


class StoreProfiles:
    """Layer 3 of design/001 from the store's user profiles."""

    def __init__(self, store: MemoryLayerRows) -> None:
        self._store = store

    async def profile(self, user_id: str, chat_id: str) -> UserProfileSlot | None:
        found = await self._store.get_user_profile(user_id)
        if found is None:
            return None
        return UserProfileSlot(found.user_id, found.nickname, found.preferences, found.relationship)


class StoreSummaries:
    """Layer 4 of design/001 from the store's rolling summary of the chat, in ``priority`` order."""

    def __init__(self, store: MemoryLayerRows, priority: tuple[str, ...] = ()) -> None:
        self._store = store
        self._priority = priority

    async def summary(self, chat_id: str, topic_thread_id: str | None) -> MemorySummarySlot | None:
        found = await self._store.get_memory_summary(chat_id)
        if found is None or not found.summary:
            return None
        slot = MemorySummarySlot.from_summary(found.summary, self._priority)
        return slot if slot.sections else None


@dataclass(frozen=True, slots=True)
class BuilderSettings:
    recent_dialogue_max: int = 20
    # Messages read from the conversation thread before filtering (the bot's replies are merged in).
    conversation_window: int = 60
    # The chat's latest messages searched for bot replies to this conversation not linked to its thread.
    reply_window: int = 30


@dataclass(frozen=True, slots=True)
class BuiltContext:
    """The packet and what was decided on the way; ``degraded`` names parts that failed and were left out.

    ``session_created`` is true when this turn opened a new session (design/001's session start).
    ``writes`` are the build's writes still going on behind it (``defer_writes``), until
    :meth:`ContextBuilder.settle`."""

    packet: ContextPacket
    resolution: Resolution | None
    session: Session | None
    degraded: tuple[str, ...] = ()
    session_created: bool = False
    writes: DeferredWrites | None = field(default=None, compare=False, repr=False)

    async def written(self) -> None:
        """Until the build's deferred writes are done (at once without any)."""
        if self.writes is not None:
            await self.writes.wait()


@dataclass(frozen=True, slots=True)
class BuilderStatistics:
    packets: int
    by_reason: tuple[tuple[str, int], ...]
    degraded: int


def _turn(message: StoredMessage) -> DialogueTurn:
    return DialogueTurn(
        speaker_id=message.sender_id,
        speaker_name=message.sender_name,
        text=message.text,
        time=message.time,
        from_self=message.from_self,
        message_id=message.message_id,
        sent_elsewhere=message.sent_elsewhere,
    )


class ContextBuilder:
    """Builds one ContextPacket per activation from the store, the resolver, sessions and retrieval."""

    def __init__(
        self,
        store: ConversationRows,
        *,
        persona: PersonaSlot,
        resolver: ThreadResolver,
        sessions: SessionManager,
        retrieval: RetrievalEngine | None = None,
        settings: BuilderSettings | None = None,
        profiles: ProfileProvider | None = None,
        summaries: SummaryProvider | None = None,
        recent: RecentMessages | None = None,
    ) -> None:
        self._store = store
        self._persona = persona
        self._resolver = resolver
        self._sessions = sessions
        self._retrieval = retrieval
        self._settings = settings or BuilderSettings()
        self._profiles = profiles
        self._summaries = summaries
        self._recent = recent
        self._by_reason: Counter[str] = Counter()
        self._degraded = 0
        # Per chat, the last deferred build's writes: the chat's next build waits for them.
        self._pending: dict[str, DeferredWrites] = {}

    async def _try(
        self, part: str, work: Awaitable[T] | Callable[[], Awaitable[T]], failed: list[str], chat_id: str
    ) -> T | None:
        try:
            return await (work() if callable(work) else work)
        except Exception as exc:  # one failing part degrades the packet; it never loses the turn
            failed.append(part)
            log.warning("context_part_failed", part=part, chat_id=chat_id, error=repr(exc))
            return None
        finally:
            if stages.ENABLED:  # when each part was done (the bench's breakdown of context.parts)
                stages.stamp_current(f"part.{part}")

    async def build(
        self,
        trigger: ChatMessage | None,
        *,
        chat: ChatInfo,
        now: float,
        reason: BuildReason | str,
        conversation_thread_id: str | None = None,
        cue: str | None = None,
        topic_thread_id: str | None = None,
        defer_writes: bool = False,
    ) -> BuiltContext:
        """The packet for an activation in ``chat``: ``trigger`` is the message that woke the bot, or
        ``None`` for a proactive wake, which brings a ``cue`` (and may name its ``topic_thread_id``).

        ``defer_writes``: the build's writes go on behind the packet (``BuiltContext.writes``); the
        caller calls :meth:`settle` before acting on the model's answer."""
        why = BuildReason(reason)
        if trigger is not None and trigger.chat_id != chat.chat_id:
            raise ValueError(f"message of {trigger.chat_id} built in {chat.chat_id}")
        chat_id = chat.chat_id
        text = trigger.text if trigger is not None else (cue or "")
        failed: list[str] = []
        before = self._pending.get(chat_id)
        if before is not None:
            await before.wait()  # the chat's last build (an episode cut short) is still writing
            if self._pending.get(chat_id) is before:
                del self._pending[chat_id]
        writes = DeferredWrites(chat_id) if defer_writes else None
        if writes is not None:
            self._pending[chat_id] = writes

        resolution = await self._try(
            "thread",
            self._thread(trigger, chat, text, now, conversation_thread_id, topic_thread_id, writes),
            failed,
            chat_id,
        )
        stages.stamp_current("context.thread")
        thread = resolution.thread if resolution is not None else None
        created = resolution is not None and resolution.created
        session: Session | None = None
        session_created = False
        handoff = None
        if thread is not None:
            opened = await self._try(
                "session",
                self._sessions.open(
                    thread,
                    chat_id,
                    now=now,
                    screen_context=chat.screen_mapping(),
                    thread_created=created,
                    writes=writes,
                ),
                failed,
                chat_id,
            )
            if opened is not None:
                session = opened.session
                session_created = opened.created
                handoff = opened.handoff  # delivered to a new session; an ongoing one looks it up below
        if writes is not None:
            writes.session_opened()

        stages.stamp_current("context.session")
        # Everything below reads independent parts: side by side, each failing alone.
        thread_id = thread.id if thread is not None else None
        tasks_of = self._tasks_of(thread, created, resolution)
        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "dialogue": functools.partial(self._dialogue, chat_id, trigger, conversation_thread_id, thread),
            "tasks": functools.partial(self._thread_slot, thread, tasks_of),
            "input": functools.partial(self._input, trigger, cue, now),
        }
        if session is not None and handoff is None and not session_created:
            calls["handoff"] = functools.partial(self._sessions.handoffs.for_session, session)
        if self._retrieval is not None and text.strip():
            query = RetrievalQuery(
                chat_id=chat_id,
                text=text,
                now=now,
                conversation_thread_id=conversation_thread_id,
                topic_thread_id=thread_id,
                sender_id=trigger.sender_id if trigger is not None else None,
                exclude_message_ids=frozenset({trigger.message_id}) if trigger is not None else frozenset(),
                new_topic=created,
            )
            calls["retrieval"] = functools.partial(self._retrieval.retrieve, query, tasks_of=tasks_of)
        if self._profiles is not None and trigger is not None and not trigger.from_self:
            calls["profile"] = functools.partial(self._profiles.profile, trigger.sender_id, chat_id)
        if self._summaries is not None:
            calls["summary"] = functools.partial(self._summaries.summary, chat_id, thread_id)
        names = list(calls)
        results = await gather([functools.partial(self._try, n, calls[n], failed, chat_id) for n in names])
        stages.stamp_current("context.parts")
        got = dict(zip(names, results, strict=True))
        dialogue: tuple[DialogueTurn, ...] = got["dialogue"] or ()
        thread_slot: ThreadSlot | None = got["tasks"]
        handoff = handoff or got.get("handoff")
        # Retrieval ran beside the dialogue: drop what the dialogue already shows.
        shown = {f"{chat_id}/{t.message_id}" for t in dialogue}
        retrieved = tuple(r for r in got.get("retrieval") or () if r.source_id not in shown)
        profile: UserProfileSlot | None = got.get("profile")
        summary: MemorySummarySlot | None = got.get("summary")

        if session is not None and trigger is not None:
            line = f"{trigger.sender_name or trigger.sender_id}: {trigger.text}"
            if writes is None:
                recorded = await self._try(
                    "session", self._sessions.record_turn(session, now=now, dialogue=(line,)), failed, chat_id
                )
            else:
                # The packet holds the turn as the record will; the record itself goes on behind it.
                writes.add(
                    "session",
                    functools.partial(self._sessions.record_turn, session, now=now, dialogue=(line,)),
                )
                recorded = self._sessions.turn(session, now=now, dialogue=(line,))
            session = recorded or session

        stages.stamp_current("context.turn")
        packet = ContextPacket(
            chat_id=chat_id,
            persona=self._persona,
            vision=VisionSlot.from_mapping(thread.vision) if thread is not None else None,
            thread=thread_slot,
            session=self._session_slot(session, chat, dialogue)
            if session is not None
            else self._bare_session(chat, dialogue),
            handoff=handoff_slot(handoff) if handoff is not None else None,
            retrieved=retrieved,
            user_input=self._without_quote_in(got["input"], dialogue),
            user_profile=profile,
            memory_summary=summary,
            conversation_thread_id=conversation_thread_id,
            reason=why.value,
            notes=tuple(f"degraded:{part}" for part in failed),
        )
        self._by_reason[why.value] += 1
        self._degraded += bool(failed)
        return BuiltContext(packet, resolution, session, tuple(failed), session_created, writes)

    async def settle(self, built: BuiltContext) -> BuiltContext:
        """``built`` once its deferred writes are done: a part whose write failed is among
        ``degraded``, and a session that is not on disk is no longer ``session`` (nothing records the
        reply into it). Call it once per build; at once without deferred writes."""
        writes = built.writes
        if writes is None:
            return built
        await writes.wait()
        chat_id = built.packet.chat_id
        if self._pending.get(chat_id) is writes:
            del self._pending[chat_id]
        if not writes.failed:
            return replace(built, writes=None)
        self._degraded += not built.degraded
        degraded = (*built.degraded, *(part for part in writes.failed if part not in built.degraded))
        session = built.session if writes.session_stored() else None
        return replace(built, session=session, degraded=degraded, writes=None)

    async def record_reply(
        self,
        built: BuiltContext,
        text: str,
        *,
        now: float,
        actions: tuple[str, ...] = (),
        resume_point: str | None = None,
    ) -> None:
        """After the bot answered: its turn, the actions taken and where to resume go into the session."""
        if built.session is None:
            return
        dialogue = (f"{self._persona.name}: {text}",) if text else ()
        try:
            await self._sessions.record_turn(
                built.session.id, now=now, dialogue=dialogue, actions=actions, resume_point=resume_point
            )
        except Exception as exc:
            log.warning("context_record_reply_failed", session_id=built.session.id, error=repr(exc))

    # -- parts -------------------------------------------------------------------------------------

    async def _thread(
        self,
        trigger: ChatMessage | None,
        chat: ChatInfo,
        text: str,
        now: float,
        conversation_thread_id: str | None,
        topic_thread_id: str | None,
        writes: DeferredWrites | None,
    ) -> Resolution | None:
        if topic_thread_id is not None:
            thread = await self._store.get_topic_thread(topic_thread_id)
            if thread is not None and chat.chat_id in thread.chat_ids:
                return await self._resolver.explicit(thread, now=now, writes=writes)
        if trigger is None and not text.strip():
            return None
        return await self._resolver.resolve(
            chat.chat_id,
            text,
            now=now,
            conversation_thread_id=conversation_thread_id,
            message_id=trigger.message_id if trigger is not None else None,
            chat_name=chat.name,
            may_create=trigger is not None,
            writes=writes,
        )

    async def _dialogue(
        self,
        chat_id: str,
        trigger: ChatMessage | None,
        conversation_thread_id: str | None,
        thread: TopicThread | None,
    ) -> tuple[DialogueTurn, ...]:
        cfg = self._settings
        first: Callable[[], Awaitable[list[StoredMessage]]]
        if conversation_thread_id is not None:
            first = functools.partial(
                self._store.conversation_messages, conversation_thread_id, limit=cfg.conversation_window
            )
        elif thread is not None:
            first = functools.partial(
                self._store.topic_messages, thread.id, chat_id=chat_id, limit=cfg.recent_dialogue_max
            )
        else:
            return ()
        # The conversation and the chat's latest messages (for the bot's replies): read side by side.
        stored, latest = await gather(
            [first, functools.partial(self._store.recent_messages, chat_id, limit=cfg.reply_window)]
        )
        in_conversation = [m for m in stored if m.chat_id == chat_id]
        if conversation_thread_id is not None:
            buffered = self._recent.recent(chat_id) if self._recent is not None else ()
            in_conversation += [m for m in buffered if m.thread_id == conversation_thread_id]
        # Keyed by the message, not its platform id: ids repeat in a chat over a long history.
        chosen = {_identity(m): m for m in in_conversation}
        # The bot's own replies to this conversation, even where they were not linked to its thread.
        pool = list(self._recent.recent(chat_id)) if self._recent is not None else []
        pool += latest
        answered = {m.message_id for m in chosen.values()}
        for message in pool:
            if message.from_self and message.chat_id == chat_id and message.reply_to in answered:
                chosen.setdefault(_identity(message), message)
        if trigger is not None:
            chosen.pop(_identity(trigger), None)
            chosen = {k: m for k, m in chosen.items() if m.time <= trigger.time}
        ordered = sorted(chosen.values(), key=lambda m: (m.time, m.message_id))
        ordered = [m for m in ordered if not m.recalled]
        return tuple(_turn(m) for m in ordered[-cfg.recent_dialogue_max :]) if cfg.recent_dialogue_max else ()

    def _tasks_of(
        self, thread: TopicThread | None, created: bool, resolution: Resolution | None
    ) -> Callable[[], Awaitable[Sequence[Task]]]:
        """The thread's latest tasks, read once for whichever parts ask (not at all when the resolver
        read them for this turn); none for a thread this turn made."""
        if thread is None or created:
            return _no_tasks
        if resolution is not None and resolution.tasks is not None and resolution.thread.id == thread.id:
            return functools.partial(_these, resolution.tasks)
        return once(functools.partial(self._store.list_tasks, topic_thread_id=thread.id, limit=THREAD_TASKS))

    async def _thread_slot(
        self, thread: TopicThread | None, tasks_of: Callable[[], Awaitable[Sequence[Task]]]
    ) -> ThreadSlot | None:
        if thread is None:
            return None
        tasks = list(await tasks_of())
        lines = task_lines(tasks)
        return ThreadSlot(
            thread_id=thread.id,
            thread_title=thread.title,
            thread_type=thread.type,
            thread_summary=thread.summary,
            linked_task_ids=tuple(t.id for t in tasks),
            thread_tags=thread.tags,
            tasks=lines,
        )

    @staticmethod
    def _session_slot(session: Session, chat: ChatInfo, dialogue: tuple[DialogueTurn, ...]) -> SessionSlot:
        return SessionSlot(
            session_id=session.id,
            state=session.state.value,
            recent_dialogue=dialogue,
            recent_actions=session.recent_actions,
            screen_context=chat.screen(),
            interruptions=interruption_lines(session),
            resume_point=session.resume_point,
        )

    @staticmethod
    def _bare_session(chat: ChatInfo, dialogue: tuple[DialogueTurn, ...]) -> SessionSlot | None:
        """Without a session record (it failed), the dialogue still belongs in the packet."""
        if not dialogue:
            return None
        return SessionSlot(
            session_id="", state="active", recent_dialogue=dialogue, screen_context=chat.screen()
        )

    @staticmethod
    def _without_quote_in(
        user_input: UserInputSlot | None, dialogue: tuple[DialogueTurn, ...]
    ) -> UserInputSlot | None:
        """The quoted message need not be attached when the dialogue already shows it."""
        if user_input is None or user_input.attached_context is None or user_input.message_id is None:
            return user_input
        quoted = user_input.attached_context_id
        if quoted is not None and quoted in {t.message_id for t in dialogue}:
            return replace(user_input, attached_context=None, attached_context_id=None)
        return user_input

    async def _input(self, trigger: ChatMessage | None, cue: str | None, now: float) -> UserInputSlot | None:
        if trigger is None:
            return UserInputSlot(raw_text=cue, input_type="proactive", timestamp=now) if cue else None
        attached = None
        if trigger.reply_to is not None:
            quoted = await self._store.get_message(trigger.chat_id, trigger.reply_to)
            if quoted is not None:
                attached = f"{quoted.sender_name or quoted.sender_id}: {quoted.text}"
                if quoted.sent_elsewhere:  # its account's, not its own words
                    attached = f"{SENT_ELSEWHERE_LABEL} {attached}"
        return UserInputSlot(
            raw_text=trigger.text,
            input_type="text",
            timestamp=trigger.time,
            attached_context=attached,
            attached_context_id=trigger.reply_to if attached is not None else None,
            sender_id=trigger.sender_id,
            sender_name=trigger.sender_name,
            message_id=trigger.message_id,
        )

    def statistics(self) -> BuilderStatistics:
        return BuilderStatistics(
            packets=sum(self._by_reason.values()),
            by_reason=tuple(sorted(self._by_reason.items())),
            degraded=self._degraded,
        )


async def _no_tasks() -> Sequence[Task]:
    return ()


async def _these(tasks: Sequence[Task]) -> Sequence[Task]:
    return tasks
