"""The values the store keeps: one frozen slotted dataclass per record kind.

Records are plain values. Backends turn them into rows and back; nothing here knows about SQL.
JSON-shaped fields (``vision``, ``screen_context``, ``payload``...) are ``Mapping[str, Any]`` holding
only JSON-serialisable values; list-shaped fields are tuples. Times are floats, seconds since the epoch,
always given by the caller (the store never reads the clock for a record's fields).

Keys, so every backend agrees on what "upsert" replaces:

=====================  ==========================================
StoredMessage          none: each message is its own row (see below)
EventRecord            id
ScheduledActivation    event_id
LexiconTermRecord      (scope, owner, term)
TopicThread            id
Session                id
Handoff                id
Task                   id
Memory                 id
MemorySummary          conversation
TokenUsage             (chat_id, day)
UserProfile            user_id
TranscriptArchive      session_id
EpisodeRecord          id (its steps are keyed by (episode_id, index))
ToolCallRecord         id
SpeechRecord           append-only log
=====================  ==========================================

A platform message id does not name one message: OneBot implementations derive their int32 ids from
hashes or restart their counters, so ids repeat inside a chat over a long history. A message with a
known id but another sender, text or a time far apart is a new message, stored beside the older one;
only a repeated *delivery* of one message (:func:`same_delivery`: same chat, id, sender and text
within ``DUPLICATE_WINDOW`` seconds; for the bot's own messages, same chat and id) is kept once, the
first copy winning. Lookups by id (``get_message``, a reply's target, a recall notice, a topic link)
mean the most recent message with that id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from runtime.unicode_safe import clean_text

if TYPE_CHECKING:
    from runtime.kernel.message import ChatMessage

JsonMap = Mapping[str, Any]


def _empty() -> JsonMap:
    return {}


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A chat message as stored: the kernel's ``ChatMessage`` plus the links made for it.

    ``thread_id`` is the kernel's *conversation* thread; ``topic_thread_id`` the long-lived *topic*
    thread the ThreadResolver mapped it onto (``None`` until resolved, or for chatter never resolved).
    """

    chat_id: str
    message_id: str
    sender_id: str
    sender_name: str
    time: float
    text: str
    thread_id: str | None = None
    topic_thread_id: str | None = None
    from_self: bool = False
    recalled: bool = False
    reply_to: str | None = None
    mentions: tuple[str, ...] = ()
    addressed: bool = False
    sent_elsewhere: bool = False  # the account's own message, not sent by this bot (ChatMessage's)

    @classmethod
    def from_chat_message(
        cls,
        message: ChatMessage,
        *,
        thread_id: str | None = None,
        topic_thread_id: str | None = None,
    ) -> StoredMessage:
        return cls(
            chat_id=message.chat_id,
            message_id=message.message_id,
            sender_id=message.sender_id,
            sender_name=message.sender_name,
            time=message.time,
            text=message.text,
            thread_id=thread_id,
            topic_thread_id=topic_thread_id,
            from_self=message.from_self,
            reply_to=message.reply_to,
            mentions=message.mentions,
            addressed=message.addressed,
            sent_elsewhere=message.from_self and message.sent_elsewhere,
        )

    def encodable(self) -> StoredMessage:
        """This message with lone surrogates replaced (itself when there are none): a backend stores
        the odd character as U+FFFD instead of refusing the message."""
        fields = (self.chat_id, self.message_id, self.sender_id, self.sender_name, self.text, *self.mentions)
        if all(clean_text(f) is f for f in fields) and clean_text(self.reply_to or "") == (
            self.reply_to or ""
        ):
            return self
        return replace(
            self,
            chat_id=clean_text(self.chat_id),
            message_id=clean_text(self.message_id),
            sender_id=clean_text(self.sender_id),
            sender_name=clean_text(self.sender_name),
            text=clean_text(self.text),
            reply_to=clean_text(self.reply_to) if self.reply_to is not None else None,
            mentions=tuple(clean_text(m) for m in self.mentions),
        )


# Copies of one message arrive this close together (a re-sent frame, a journal replaying what it
# received before a kill -9); the same id, sender and text further apart is a new message.
DUPLICATE_WINDOW = 3_600.0


def delivery_key(message: StoredMessage | Any) -> tuple[str, str, str, str]:
    """What two deliveries of one message share (with ``time`` within ``DUPLICATE_WINDOW``). The
    bot's own messages are known by id alone: the copy noted at sending and the platform's echo
    may render differently and name a different sender."""
    if message.from_self:
        return (message.chat_id, message.message_id, "", "\x00self")
    return (message.chat_id, message.message_id, message.sender_id, message.text)


def same_delivery(a: StoredMessage, b: StoredMessage) -> bool:
    return delivery_key(a) == delivery_key(b) and abs(a.time - b.time) <= DUPLICATE_WINDOW


@dataclass(frozen=True, slots=True)
class MessageHit:
    """One full-text search result; a higher ``score`` is a better match."""

    message: StoredMessage
    score: float


@dataclass(frozen=True, slots=True)
class MessageRecalled:
    """A write item: the platform recalled (withdrew) a message. It stays stored, flagged."""

    chat_id: str
    message_id: str


@dataclass(frozen=True, slots=True)
class TopicLink:
    """A write item: these messages of a chat belong to a topic thread (set after resolution)."""

    chat_id: str
    message_ids: tuple[str, ...]
    topic_thread_id: str


# --------------------------------------------------------------------------- kernel state


@dataclass(frozen=True, slots=True)
class EventRecord:
    """The kernel's ``BotEvent`` as stored; ``state`` is the ``EventState`` value as a string.

    Field names match ``BotEvent`` one for one, so ``BotEvent(**record.fields())`` (with the state
    converted back to ``EventState``) restores it.
    """

    id: str
    kind: str
    chat_id: str
    thread_id: str | None
    actor_ids: tuple[str, ...]
    evidence_message_ids: tuple[str, ...]
    created_at: float
    updated_at: float
    not_before: float
    deadline: float | None
    priority: float
    state: str
    payload: JsonMap = field(default_factory=_empty)

    @classmethod
    def from_event(cls, event: Any) -> EventRecord:
        """Copy any object with ``BotEvent``'s fields (duck-typed, so the store needs no kernel import)."""
        return cls(
            id=event.id,
            kind=event.kind,
            chat_id=event.chat_id,
            thread_id=event.thread_id,
            actor_ids=tuple(event.actor_ids),
            evidence_message_ids=tuple(event.evidence_message_ids),
            created_at=float(event.created_at),
            updated_at=float(event.updated_at),
            not_before=float(event.not_before),
            deadline=None if event.deadline is None else float(event.deadline),
            priority=float(event.priority),
            state=str(event.state),
            payload=dict(event.payload),
        )

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


#: ``EventState`` values after which an event never changes again (design/0002 §3); restore skips them.
TERMINAL_EVENT_STATES = frozenset({"replied", "skipped", "expired"})


@dataclass(frozen=True, slots=True)
class ScheduledActivation:
    """A pending activation of the scheduler: the event it wakes and when. Deleted once it fired."""

    event_id: str
    chat_id: str
    not_before: float
    deadline: float | None
    priority: float
    created_at: float


@dataclass(frozen=True, slots=True)
class ActivationDone:
    """A write item: the activation for this event fired, expired or was cancelled; forget it."""

    event_id: str


@dataclass(frozen=True, slots=True)
class SpeechRecord:
    """One thing the bot said in a chat; budgets are recomputed from this log after a restart."""

    chat_id: str
    time: float
    forced: bool = False


@dataclass(frozen=True, slots=True)
class LexiconTermRecord:
    """A term of the dynamic lexicon under its key ``(scope, owner)``; ``extra`` keeps what else it holds."""

    scope: str
    owner: str
    term: str
    weight: float
    pinned: bool = False
    suppressed: bool = False
    source: str = "manual"
    hits: int = 0
    created_at: float = 0.0
    updated_at: float = 0.0
    expires_at: float | None = None
    extra: JsonMap = field(default_factory=_empty)


# --------------------------------------------------------------------------- context runtime


class TopicThreadStatus(StrEnum):
    ACTIVE = "active"
    DORMANT = "dormant"
    ARCHIVED = "archived"


@dataclass(frozen=True, slots=True)
class TopicThread:
    """A topic thread (design/000 §3.2: 灰风架构设计, 陪我看视频): the unit sessions and memories belong to.

    ``chat_ids`` are the chats explicitly bound to it (the ThreadResolver's first rule).
    """

    id: str
    title: str
    type: str
    summary: str
    created_at: float
    updated_at: float
    vision: JsonMap = field(default_factory=_empty)
    tags: tuple[str, ...] = ()
    chat_ids: tuple[str, ...] = ()
    status: TopicThreadStatus = TopicThreadStatus.ACTIVE
    extra: JsonMap = field(default_factory=_empty)


class SessionState(StrEnum):
    ACTIVE = "active"
    IDLE = "idle"
    INTERRUPTED = "interrupted"
    CLOSED = "closed"
    HANDOFF_WRITTEN = "handoff_written"


#: Sessions in these states are "open": restored on start (and marked interrupted by the caller).
OPEN_SESSION_STATES = frozenset({SessionState.ACTIVE, SessionState.IDLE, SessionState.INTERRUPTED})


@dataclass(frozen=True, slots=True)
class Session:
    """A session (design/000 §8): one working window of a topic thread in one chat."""

    id: str
    topic_thread_id: str
    chat_id: str
    state: SessionState
    started_at: float
    updated_at: float
    recent_dialogue: tuple[str, ...] = ()
    recent_actions: tuple[str, ...] = ()
    screen_context: JsonMap = field(default_factory=_empty)
    interruptions: tuple[JsonMap, ...] = ()
    resume_point: str | None = None
    ended_at: float | None = None
    extra: JsonMap = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class Handoff:
    """A handoff (design/000 §9): what session N hands to session N+1 of the same topic thread.

    ``written_by`` is ``"model"`` (the compression role) or ``"fallback"`` (the deterministic digest).
    """

    id: str
    from_session_id: str
    topic_thread_id: str
    summary: str
    created_at: float
    to_session_id: str | None = None
    unfinished_items: tuple[str, ...] = ()
    risks: tuple[str, ...] = ()
    resume_suggestion: str = ""
    written_by: str = "model"


class TaskStatus(StrEnum):
    OPEN = "open"
    IN_PROGRESS = "in_progress"
    BLOCKED = "blocked"
    DONE = "done"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class Task:
    """A task (design/000 §3.4): a unit of work under a topic thread."""

    id: str
    topic_thread_id: str
    title: str
    status: TaskStatus
    created_at: float
    updated_at: float
    conclusion: str | None = None
    tags: tuple[str, ...] = ()
    extra: JsonMap = field(default_factory=_empty)


class ScopeType(StrEnum):
    IDENTITY = "identity"
    CHAT = "chat"
    THREAD = "thread"
    TASK = "task"
    SOP = "sop"
    USER = "user"


@dataclass(frozen=True, slots=True)
class Memory:
    """A long-term memory. Its scope decides who may see it: a ``chat`` memory never reaches another chat.

    ``embedding`` is the raw vector (float32 bytes, little-endian) or ``None``; the store keeps it as
    a BLOB and never computes with it. ``source_message_id`` and ``source_speaker_id`` name the chat
    message the memory was taken from and who said it (``None``: not taken from a message); a
    ``user`` memory a tool writes is always filed under its source's speaker.
    """

    id: str
    scope_type: ScopeType
    scope_id: str
    memory_type: str
    content: str
    importance: float
    created_at: float
    updated_at: float = 0.0
    tags: tuple[str, ...] = ()
    embedding: bytes | None = None
    embedding_model: str | None = None
    extra: JsonMap = field(default_factory=_empty)
    source_message_id: str | None = None
    source_speaker_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryHit:
    memory: Memory
    score: float


@dataclass(frozen=True, slots=True)
class MemoryVector:
    """A memory's embedding without the rest of the row, for cosine ranking in numpy."""

    memory_id: str
    scope_type: ScopeType
    scope_id: str
    model: str | None
    data: bytes


@dataclass(frozen=True, slots=True)
class TranscriptArchive:
    """A closed session's full transcript (``content`` is text or a JSON document, as ``fmt`` says)."""

    session_id: str
    topic_thread_id: str
    chat_id: str
    content: str
    created_at: float
    fmt: str = "text"


# --------------------------------------------------------------------------- memory layer (design/001)


@dataclass(frozen=True, slots=True)
class MemorySummary:
    """One conversation's rolling summary (design/001 ④), with the counters that make triggers restart-safe.

    ``summary`` is the schema'd JSON document (version, last_compressed_at, total_rounds_processed,
    summary{...}); the counters live beside it so they survive even when the document is replaced.
    """

    conversation: str
    version: int
    summary: JsonMap
    rounds_processed: int
    rounds_since_compression: int
    tokens_since_compression: int
    last_compressed_at: float | None
    updated_at: float
    injection_log: tuple[JsonMap, ...] = ()


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens spent for one chat on one day (``day`` is ``YYYY-MM-DD``); added to, never overwritten."""

    chat_id: str
    day: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0


@dataclass(frozen=True, slots=True)
class UserProfile:
    user_id: str
    nickname: str
    updated_at: float
    preferences: tuple[str, ...] = ()
    relationship: str = ""
    extra: JsonMap = field(default_factory=_empty)


# --------------------------------------------------------------------------- episodes and tools


@dataclass(frozen=True, slots=True)
class EpisodeStep:
    """One step of an episode's ReAct loop (``kind``: thought, action, observation, ...)."""

    episode_id: str
    index: int
    kind: str
    at: float
    payload: JsonMap = field(default_factory=_empty)


@dataclass(frozen=True, slots=True)
class EpisodeRecord:
    id: str
    chat_id: str
    started_at: float
    state: str
    event_id: str | None = None
    thread_id: str | None = None
    topic_thread_id: str | None = None
    session_id: str | None = None
    ended_at: float | None = None
    outcome: str | None = None
    steps: tuple[EpisodeStep, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    id: str
    tool: str
    chat_id: str
    started_at: float
    arguments: JsonMap = field(default_factory=_empty)
    episode_id: str | None = None
    status: str = "ok"
    result: str | None = None
    error: str | None = None
    ended_at: float | None = None


# --------------------------------------------------------------------------- restoration


@dataclass(frozen=True, slots=True)
class RuntimeState:
    """Everything the runtime puts back on start (see ``Store.load_runtime_state``).

    ``open_sessions`` are returned as stored; the caller marks them interrupted (process exit).
    """

    events: tuple[EventRecord, ...]
    pending_activations: tuple[ScheduledActivation, ...]
    speeches: Mapping[str, tuple[SpeechRecord, ...]]
    lexicon_terms: tuple[LexiconTermRecord, ...]
    recent_messages: tuple[StoredMessage, ...]
    topic_threads: tuple[TopicThread, ...]
    open_sessions: tuple[Session, ...]


#: What the writer task accepts: each becomes one statement inside the flush's transaction.
WriteItem = (
    StoredMessage
    | MessageRecalled
    | TopicLink
    | SpeechRecord
    | EventRecord
    | ScheduledActivation
    | ActivationDone
    | ToolCallRecord
)
