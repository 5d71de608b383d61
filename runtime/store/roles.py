"""The store's roles: small Protocols, one per kind of record, that together make ``Store``.

A consumer asks for the role it uses (the context resolver for topic threads and messages, the
writer for batched writes, the lexicon saver for terms), so it can be handed any backend that
keeps those rows, or a fake in a test that implements a handful of methods instead of sixty-eight.
The conventions every backend keeps, and the table of roles, are in ``runtime.store.protocol``.
Consumers that need two roles take one of the intersections at the end of this module.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from runtime.config.store import StoreConfig
from runtime.store.records import (
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
    RuntimeState,
    ScheduledActivation,
    ScopeType,
    Session,
    SessionState,
    SpeechRecord,
    StoredMessage,
    Task,
    TaskStatus,
    TokenUsage,
    ToolCallRecord,
    TopicThread,
    TopicThreadStatus,
    TranscriptArchive,
    UserProfile,
    WriteItem,
)

#: A memory scope a caller is allowed to see: ``(ScopeType.CHAT, "group:1")``, ``(ScopeType.IDENTITY, "")``.
MemoryScope = tuple[ScopeType, str]


@dataclass(frozen=True, slots=True)
class StoreStatistics:
    """``messages`` is the number of stored messages; the write counters count ``write`` batches and
    items since the store was opened, and the writes that failed (each failure raised to the caller)."""

    backend: str
    messages: int
    batches_written: int
    items_written: int
    write_failures: int
    schema_version: int


@dataclass(frozen=True, slots=True)
class RestorePolicy:
    """How far back ``load_runtime_state`` looks (seconds before ``now``)."""

    speech_window: float = 86_400.0
    message_window: float = 3_600.0
    messages_per_chat: int = 200

    @classmethod
    def from_config(cls, config: StoreConfig) -> RestorePolicy:
        return cls(
            speech_window=config.restore_speech_window_ms / 1000,
            message_window=config.restore_message_window_ms / 1000,
            messages_per_chat=config.restore_messages_per_chat,
        )


DEFAULT_RESTORE = RestorePolicy()


@runtime_checkable
class StoreLifecycle(Protocol):
    """Closing the backend and its counters: what the owner of the store uses."""

    async def close(self) -> None:
        """Release the backend (idempotent). Later calls raise ``StoreClosedError``."""

    def statistics(self) -> StoreStatistics: ...


@runtime_checkable
class BatchWrites(Protocol):
    """One transaction per batch: the writer task's entry point (messages, recalls, topic links,
    speeches, events, activations, tool calls)."""

    async def write(self, items: Sequence[WriteItem]) -> None:
        """Apply every item in one transaction (all or none). A message already stored (the same
        delivery, ``records.same_delivery``) is not stored again."""


@runtime_checkable
class MessageRows(Protocol):
    """The chats' messages: appended, looked up by platform id, listed, searched."""

    async def append_messages(self, messages: Sequence[StoredMessage]) -> None: ...

    async def get_message(self, chat_id: str, message_id: str) -> StoredMessage | None:
        """The most recent message of the chat with this platform id."""

    async def get_messages(self, chat_id: str, message_ids: Sequence[str]) -> list[StoredMessage]:
        """The most recent message for each id, in the order of ``message_ids``; missing ids are skipped."""

    async def recent_messages(
        self, chat_id: str, *, limit: int = 50, before: float | None = None
    ) -> list[StoredMessage]:
        """The latest ``limit`` messages of a chat (strictly before ``before`` if given), oldest first."""

    async def list_messages(
        self, chat_id: str, *, since: float | None = None, until: float | None = None, limit: int = 1000
    ) -> list[StoredMessage]:
        """Messages of a chat with ``since <= time < until``, oldest first, at most ``limit`` (earliest)."""

    async def conversation_messages(self, thread_id: str, *, limit: int = 50) -> list[StoredMessage]:
        """The latest ``limit`` messages of a *conversation* thread (the kernel's), oldest first."""

    async def topic_messages(
        self, topic_thread_id: str, *, chat_id: str | None = None, limit: int = 50
    ) -> list[StoredMessage]:
        """The latest ``limit`` messages linked to a *topic* thread, oldest first."""

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
        """Full-text search inside the given chats only; best first.

        ``newest``: rank only the chats' newest this many matching messages (recalled ones and other
        topics' among them count, then are left out), so a common word in a long history costs a
        window of its matches, not all of them; the best of the window come first all the same."""

    async def count_messages(self, chat_id: str | None = None) -> int: ...

    async def messages_since(self, since: float, *, per_chat: int = 200) -> list[StoredMessage]:
        """Each chat's latest ``per_chat`` messages with ``time >= since``; oldest first overall."""


@runtime_checkable
class EventRows(Protocol):
    """The kernel's own state: its events, the scheduled activations and the speech log (budgets)."""

    async def save_event(self, event: EventRecord) -> None: ...

    async def get_event(self, event_id: str) -> EventRecord | None: ...

    async def delete_event(self, event_id: str) -> bool: ...

    async def load_events(self, *, states: Collection[str] | None = None) -> list[EventRecord]:
        """Events (in the given states, if any), oldest ``created_at`` first."""

    async def prune_events(self, *, states: Collection[str], updated_before: float) -> int:
        """Delete events in ``states`` not updated since ``updated_before``; returns how many."""

    async def save_activation(self, activation: ScheduledActivation) -> None: ...

    async def delete_activation(self, event_id: str) -> bool: ...

    async def load_pending_activations(self) -> list[ScheduledActivation]:
        """Every stored activation, earliest ``not_before`` first (higher priority first on ties)."""

    # -- speech log (budgets) --------------------------------------------------------------------

    async def append_speech(self, speech: SpeechRecord) -> None: ...

    async def recent_speeches(self, chat_id: str, *, since: float) -> list[SpeechRecord]:
        """The chat's speeches with ``time >= since``, oldest first."""

    async def load_recent_speeches(self, *, since: float) -> dict[str, list[SpeechRecord]]: ...

    async def prune_speeches(self, *, before: float) -> int: ...


@runtime_checkable
class LexiconRows(Protocol):
    """The learned lexicon terms."""

    async def save_lexicon_terms(self, terms: Sequence[LexiconTermRecord]) -> None: ...

    async def delete_lexicon_term(self, scope: str, owner: str, term: str) -> bool: ...

    async def replace_lexicon_terms(self, terms: Sequence[LexiconTermRecord]) -> None:
        """Make the stored lexicon exactly ``terms`` (a snapshot), in one transaction."""

    async def load_lexicon_terms(
        self, *, scope: str | None = None, owner: str | None = None
    ) -> list[LexiconTermRecord]: ...


@runtime_checkable
class ContextRows(Protocol):
    """The Context Runtime's rows: topic threads, sessions and their transcripts, handoffs, tasks."""

    # -- topic threads ---------------------------------------------------------------------------

    async def upsert_topic_thread(self, thread: TopicThread) -> None: ...

    async def get_topic_thread(self, thread_id: str) -> TopicThread | None: ...

    async def list_topic_threads(
        self,
        *,
        statuses: Collection[TopicThreadStatus] | None = None,
        chat_id: str | None = None,
        limit: int | None = None,
    ) -> list[TopicThread]:
        """Most recently updated first; ``chat_id`` keeps threads bound to that chat."""

    # -- sessions and transcripts ----------------------------------------------------------------

    async def upsert_session(self, session: Session) -> None: ...

    async def get_session(self, session_id: str) -> Session | None: ...

    async def list_sessions(
        self,
        *,
        topic_thread_id: str | None = None,
        chat_id: str | None = None,
        states: Collection[SessionState] | None = None,
        limit: int | None = None,
    ) -> list[Session]: ...

    async def save_transcript(self, archive: TranscriptArchive) -> None: ...

    async def get_transcript(self, session_id: str) -> TranscriptArchive | None: ...

    # -- handoffs --------------------------------------------------------------------------------

    async def save_handoff(self, handoff: Handoff) -> None: ...

    async def get_handoff(self, handoff_id: str) -> Handoff | None: ...

    async def latest_handoff(self, topic_thread_id: str) -> Handoff | None:
        """The newest handoff of a topic thread (by ``created_at``), the one session N+1 receives."""

    async def list_handoffs(self, topic_thread_id: str, *, limit: int = 10) -> list[Handoff]: ...

    # -- tasks -----------------------------------------------------------------------------------

    async def upsert_task(self, task: Task) -> None: ...

    async def get_task(self, task_id: str) -> Task | None: ...

    async def list_tasks(
        self,
        *,
        topic_thread_id: str | None = None,
        statuses: Collection[TaskStatus] | None = None,
        limit: int | None = None,
    ) -> list[Task]: ...


@runtime_checkable
class MemoryRows(Protocol):
    """Long-term memories and their embeddings, inside the scopes a caller may see."""

    async def upsert_memory(self, memory: Memory) -> None:
        """Store a memory; its ``embedding`` (if any) is kept as a BLOB, ``None`` keeps no vector."""

    async def get_memory(self, memory_id: str) -> Memory | None: ...

    async def delete_memory(self, memory_id: str) -> bool: ...

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
        """Memories inside the allowed scopes; ``tags`` keeps those with any of them. Newest first."""

    async def search_memories(
        self, query: str, *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[MemoryHit]: ...

    async def search_memories_each(
        self, queries: Sequence[str], *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[list[MemoryHit]]:
        """For each of ``queries``, in order, what :meth:`search_memories` finds for it alone, all in
        one statement (a context build searches a few words at once)."""

    async def save_memory_vector(self, memory_id: str, data: bytes, *, model: str | None = None) -> None:
        """Attach (or replace) a memory's embedding; no-op for an unknown memory id."""

    async def load_memory_vectors(
        self, *, scopes: Collection[MemoryScope], model: str | None = None
    ) -> list[MemoryVector]: ...

    async def count_memories(self) -> int: ...


@runtime_checkable
class MemoryLayerRows(Protocol):
    """The memory layer's rows: each conversation's rolling summary and each user's profile."""

    async def upsert_memory_summary(self, summary: MemorySummary) -> None: ...

    async def get_memory_summary(self, conversation: str) -> MemorySummary | None: ...

    async def list_memory_summaries(self) -> list[MemorySummary]: ...

    async def upsert_user_profile(self, profile: UserProfile) -> None: ...

    async def get_user_profile(self, user_id: str) -> UserProfile | None: ...

    async def get_user_profiles(self, user_ids: Sequence[str]) -> Mapping[str, UserProfile]: ...


@runtime_checkable
class LedgerRows(Protocol):
    """Tokens spent per chat and day (the daily cap, ``/status``)."""

    async def add_token_usage(
        self, chat_id: str, day: str, *, prompt_tokens: int, completion_tokens: int, calls: int = 1
    ) -> TokenUsage:
        """Add to the day's counters (atomically) and return the new totals."""

    async def get_token_usage(self, chat_id: str, day: str) -> TokenUsage:
        """The day's totals; zeros when nothing was spent."""

    async def list_token_usage(
        self, *, day: str | None = None, chat_id: str | None = None
    ) -> list[TokenUsage]: ...


@runtime_checkable
class EpisodeRows(Protocol):
    """Episodes with their steps, and the tool calls made in them."""

    async def save_episode(self, episode: EpisodeRecord) -> None:
        """Upsert an episode; its ``steps`` replace the stored ones when non-empty."""

    async def append_episode_step(self, step: EpisodeStep) -> None: ...

    async def get_episode(self, episode_id: str) -> EpisodeRecord | None:
        """The episode with its steps in index order."""

    async def list_episodes(self, *, chat_id: str | None = None, limit: int = 20) -> list[EpisodeRecord]:
        """Newest first, without steps (use ``get_episode`` for them)."""

    async def save_tool_call(self, call: ToolCallRecord) -> None: ...

    async def list_tool_calls(
        self, *, episode_id: str | None = None, chat_id: str | None = None, limit: int = 50
    ) -> list[ToolCallRecord]:
        """Oldest first within the newest ``limit``."""


@runtime_checkable
class RuntimeStateRows(Protocol):
    """What the runtime puts back on start, read across the other roles in one call."""

    async def load_runtime_state(
        self, *, now: float, policy: RestorePolicy = DEFAULT_RESTORE
    ) -> RuntimeState:
        """What the runtime puts back on start: non-terminal events and pending activations, speeches
        within ``policy.speech_window``, every lexicon term, each chat's recent messages (for the
        conversation-thread links), active topic threads and open sessions."""


# -- intersections: the consumers that need two roles -------------------------------------------


@runtime_checkable
class ConversationRows(MessageRows, ContextRows, Protocol):
    """Messages and the context rows: a chat's topic threads and sessions read with their messages."""


@runtime_checkable
class ConversationWrites(ConversationRows, BatchWrites, Protocol):
    """Conversation rows, and batched writes for the message→topic links written at once."""


@runtime_checkable
class RecallRows(MemoryRows, ConversationRows, Protocol):
    """What retrieval searches: memories, messages, and the tasks of the thread in view."""


@runtime_checkable
class SummaryRows(MemoryLayerRows, MessageRows, Protocol):
    """The memory layer's rows and the messages its rolling summaries are written from."""


@runtime_checkable
class ReplyRows(MessageRows, EpisodeRows, Protocol):
    """What the episode driver reads and writes: messages (the trigger after a restart) and episodes."""


@runtime_checkable
class SavedStateRows(EventRows, LexiconRows, LedgerRows, EpisodeRows, RuntimeStateRows, Protocol):
    """What the runtime's persistence saves and restores: events and speeches, lexicon changes, the
    token ledger, waiting episodes, and the restored state as one read."""
