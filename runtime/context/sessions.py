"""SessionManager: the working windows of topic threads (design/000 §8).

A session is one stretch of work on one topic thread in one chat. Its lifecycle::

    active ⇄ idle            (no turn for ``idle_after``; the next turn wakes it)
    active/idle → interrupted  (user interruption, process exit, tool interruption: recorded, with a
                                resume point; the next turn resumes it)
    active/idle/interrupted → closed → handoff_written
                             (idle timeout, manual, shutdown: transcript archived, handoff written)

:meth:`SessionManager.open` is the per-turn entry: it reuses the thread's open session in the chat,
closes one that has been silent past ``idle_timeout`` (so its handoff is written first), or creates a
new one and delivers the previous session's handoff to it. On start,
:meth:`SessionManager.mark_open_sessions_interrupted` marks what a killed process left open.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import anyio

from runtime.context.deferred import DeferredWrites, write
from runtime.context.errors import IllegalSessionTransitionError, UnknownSessionError
from runtime.context.handoffs import HandoffManager, HandoffRequest, digest_of
from runtime.context.tasks import OPEN_TASK_STATUSES
from runtime.kernel.ids import IdFactory, counter_ids
from runtime.kernel.message import SENT_ELSEWHERE_LABEL
from runtime.store.records import (
    OPEN_SESSION_STATES,
    Handoff,
    Session,
    SessionState,
    StoredMessage,
    TopicThread,
    TranscriptArchive,
)
from runtime.store.roles import ConversationRows

__all__ = [
    "CloseReason",
    "ClosedSession",
    "InterruptKind",
    "OpenedSession",
    "SessionManager",
    "SessionManagerStatistics",
    "SessionSettings",
    "interruption_lines",
]

_S = SessionState
_ALLOWED: Mapping[SessionState, frozenset[SessionState]] = {
    _S.ACTIVE: frozenset({_S.ACTIVE, _S.IDLE, _S.INTERRUPTED, _S.CLOSED}),
    _S.IDLE: frozenset({_S.ACTIVE, _S.INTERRUPTED, _S.CLOSED}),
    _S.INTERRUPTED: frozenset({_S.ACTIVE, _S.INTERRUPTED, _S.CLOSED}),
    _S.CLOSED: frozenset({_S.HANDOFF_WRITTEN}),
    _S.HANDOFF_WRITTEN: frozenset(),
}


class InterruptKind(StrEnum):
    USER = "user"
    PROCESS_EXIT = "process_exit"
    TOOL = "tool"


class CloseReason(StrEnum):
    IDLE = "idle"
    MANUAL = "manual"
    SHUTDOWN = "shutdown"


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """Durations in seconds; the ``*_max`` caps bound what a session record keeps."""

    idle_after: float = 300.0
    idle_timeout: float = 1_800.0
    dialogue_max: int = 20
    actions_max: int = 8
    interruptions_max: int = 8
    transcript_limit: int = 2_000


@dataclass(frozen=True, slots=True)
class ClosedSession:
    session: Session
    handoff: Handoff
    transcript: TranscriptArchive


@dataclass(frozen=True, slots=True)
class OpenedSession:
    """``handoff`` is the previous session's handoff, delivered to this one when it was created."""

    session: Session
    created: bool
    resumed: bool
    handoff: Handoff | None = None
    closed_previous: ClosedSession | None = None


@dataclass(frozen=True, slots=True)
class SessionManagerStatistics:
    created: int
    resumed: int
    interrupted: int
    closed: tuple[tuple[str, int], ...]
    handoffs_delivered: int


def interruption_lines(session: Session) -> tuple[str, ...]:
    """Interruption records as the SessionSlot shows them."""
    lines = []
    for record in session.interruptions:
        note = str(record.get("note") or "")
        lines.append(f"{record.get('kind', '?')}" + (f"：{note}" if note else ""))
    return tuple(lines)


def _mark(message: StoredMessage) -> str:
    """Before a transcript line: whose account said it, when it was the bot's."""
    if message.sent_elsewhere:
        return f"{SENT_ELSEWHERE_LABEL} "
    return "(bot) " if message.from_self else ""


def _stamp(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M:%S")


class SessionManager:
    """Creates, updates, interrupts and closes sessions; every change is written through to the store
    (a turn's, when the builder defers them, behind its packet: :mod:`runtime.context.deferred`)."""

    __slots__ = ("_closed", "_counts", "_handoffs", "_ids", "_locks", "_settings", "_store")

    def __init__(
        self,
        store: ConversationRows,
        handoffs: HandoffManager,
        *,
        settings: SessionSettings | None = None,
        ids: IdFactory | None = None,
    ) -> None:
        self._store = store
        self._handoffs = handoffs
        self._settings = settings or SessionSettings()
        self._ids = ids or counter_ids()
        self._locks: dict[tuple[str, str], anyio.Lock] = {}
        self._counts: Counter[str] = Counter()
        self._closed: Counter[str] = Counter()

    @asynccontextmanager
    async def _locked(self, topic_thread_id: str, chat_id: str) -> AsyncIterator[None]:
        """One lock per (topic thread, chat): a chat never gets two open sessions of a thread, a turn
        never revives a session being closed, and a slow handoff in one chat never holds up another."""
        key = (topic_thread_id, chat_id)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        try:
            async with lock:
                yield
        finally:
            stats = lock.statistics()
            if not stats.locked and stats.tasks_waiting == 0 and self._locks.get(key) is lock:
                del self._locks[key]

    @property
    def handoffs(self) -> HandoffManager:
        return self._handoffs

    async def get(self, session_id: str) -> Session:
        session = await self._store.get_session(session_id)
        if session is None:
            raise UnknownSessionError(session_id)
        return session

    @staticmethod
    def _moved(session: Session, state: SessionState, now: float, **changes: Any) -> Session:
        if state not in _ALLOWED[session.state]:
            raise IllegalSessionTransitionError(session.id, session.state.value, state.value)
        return replace(session, state=state, updated_at=max(now, session.updated_at), **changes)

    async def _move(self, session: Session, state: SessionState, now: float, **changes: Any) -> Session:
        moved = self._moved(session, state, now, **changes)
        await self._store.upsert_session(moved)
        return moved

    # -- per turn ----------------------------------------------------------------------------------

    async def open(
        self,
        thread: TopicThread,
        chat_id: str,
        *,
        now: float,
        screen_context: Mapping[str, Any] | None = None,
        thread_created: bool = False,
        writes: DeferredWrites | None = None,
    ) -> OpenedSession:
        """The session this turn belongs to: the open one, woken or resumed, or a new one.

        A session found silent past the timeout is closed first with the deterministic digest: a user's
        turn never waits for the model (the background :meth:`sweep` writes model digests). A thread
        this turn created (``thread_created``) has no session or handoff yet: none is looked up. With
        ``writes``, the session's row (and the handoff's delivery) is written there, behind the packet;
        closing a stale session is not deferred."""
        async with self._locked(thread.id, chat_id):
            open_ = (
                []
                if thread_created
                else await self._store.list_sessions(
                    topic_thread_id=thread.id, chat_id=chat_id, states=OPEN_SESSION_STATES
                )
            )
            closed_previous = None
            for stale in open_[1:]:  # never expected; close rather than keep two windows open
                await self._close(stale, now=now, reason=CloseReason.MANUAL, use_model=False)
            if open_:
                current = open_[0]
                if now - current.updated_at <= self._settings.idle_timeout:
                    resumed = current.state is not SessionState.ACTIVE
                    changes: dict[str, Any] = {}
                    if screen_context is not None and dict(screen_context) != current.screen_context:
                        changes["screen_context"] = dict(screen_context)
                    if resumed or changes:  # an active session on the same surface needs no write
                        current = self._moved(current, SessionState.ACTIVE, now, **changes)
                        await write(writes, "session", functools.partial(self._store.upsert_session, current))
                    self._counts["resumed" if resumed else "reused"] += 1
                    return OpenedSession(current, created=False, resumed=resumed)
                closed_previous = await self._close(
                    current, now=now, reason=CloseReason.IDLE, use_model=False
                )
            session = Session(
                id=self._ids("sess"),
                topic_thread_id=thread.id,
                chat_id=chat_id,
                state=SessionState.ACTIVE,
                started_at=now,
                updated_at=now,
                screen_context=dict(screen_context or {}),
            )
            await write(writes, "session", functools.partial(self._store.upsert_session, session))
            self._counts["created"] += 1
            handoff = None if thread_created else await self._handoffs.pending_for(thread.id, chat_id)
            if handoff is not None:
                handoff = await self._handoffs.deliver(handoff, session.id, writes=writes)
            else:
                self._handoffs.opened_without(session)
            return OpenedSession(
                session, created=True, resumed=False, handoff=handoff, closed_previous=closed_previous
            )

    async def record_turn(
        self,
        session_id: str | Session,
        *,
        now: float,
        dialogue: tuple[str, ...] = (),
        actions: tuple[str, ...] = (),
        resume_point: str | None = None,
        screen_context: Mapping[str, Any] | None = None,
    ) -> Session:
        """After an input or an output: recent dialogue and actions (capped), resume point, surface.

        Given the :class:`Session` itself (as the caller holds it), one read is saved; it is read again
        under the lock all the same, so a session closed meanwhile is never revived."""
        found = session_id if isinstance(session_id, Session) else await self.get(session_id)
        async with self._locked(found.topic_thread_id, found.chat_id):
            current = await self.get(found.id)
            recorded = self._recorded(current, now, dialogue, actions, resume_point, screen_context)
            await self._store.upsert_session(recorded)
            return recorded

    def turn(self, session: Session, *, now: float, dialogue: tuple[str, ...]) -> Session:
        """``session`` as :meth:`record_turn` of ``dialogue`` leaves it, written nowhere (the packet's
        view of a turn whose write goes on behind it)."""
        return self._recorded(session, now, dialogue, (), None, None)

    def _recorded(
        self,
        session: Session,
        now: float,
        dialogue: tuple[str, ...],
        actions: tuple[str, ...],
        resume_point: str | None,
        screen_context: Mapping[str, Any] | None,
    ) -> Session:
        cfg = self._settings
        changes: dict[str, Any] = {
            "recent_dialogue": (session.recent_dialogue + dialogue)[-cfg.dialogue_max :]
            if cfg.dialogue_max
            else (),
            "recent_actions": (session.recent_actions + actions)[-cfg.actions_max :]
            if cfg.actions_max
            else (),
        }
        if resume_point is not None:
            changes["resume_point"] = resume_point
        if screen_context is not None:
            changes["screen_context"] = dict(screen_context)
        target = SessionState.ACTIVE if session.state in OPEN_SESSION_STATES else session.state
        return self._moved(session, target, now, **changes)

    async def interrupt(
        self,
        session_id: str,
        *,
        now: float,
        kind: InterruptKind,
        note: str = "",
        resume_point: str | None = None,
    ) -> Session:
        """Record an interruption and where to resume; the next turn resumes the session."""
        found = await self.get(session_id)
        async with self._locked(found.topic_thread_id, found.chat_id):
            return await self._interrupt(await self.get(session_id), now, kind, note, resume_point)

    async def _interrupt(
        self, session: Session, now: float, kind: InterruptKind, note: str, resume_point: str | None
    ) -> Session:
        record = {"kind": kind.value, "at": now, "note": note}
        interruptions = (*session.interruptions, record)[-self._settings.interruptions_max :]
        changes: dict[str, Any] = {"interruptions": interruptions}
        if resume_point is not None:
            changes["resume_point"] = resume_point
        self._counts["interrupted"] += 1
        return await self._move(session, SessionState.INTERRUPTED, now, **changes)

    # -- closing -----------------------------------------------------------------------------------

    async def close(
        self, session_id: str, *, now: float, reason: CloseReason = CloseReason.MANUAL, use_model: bool = True
    ) -> ClosedSession:
        found = await self.get(session_id)
        async with self._locked(found.topic_thread_id, found.chat_id):
            return await self._close(await self.get(session_id), now=now, reason=reason, use_model=use_model)

    async def _close(
        self, session: Session, *, now: float, reason: CloseReason, use_model: bool = True
    ) -> ClosedSession:
        session = await self._move(session, SessionState.CLOSED, now, ended_at=now)
        transcript = await self._archive(session, now)
        thread = await self._store.get_topic_thread(session.topic_thread_id)
        tasks = await self._store.list_tasks(
            topic_thread_id=session.topic_thread_id, statuses=OPEN_TASK_STATUSES, limit=5
        )
        received = await self._handoffs.for_session(session)
        request = HandoffRequest(
            session_id=session.id,
            topic_thread_id=session.topic_thread_id,
            thread_title=thread.title if thread is not None else session.topic_thread_id,
            chat_id=session.chat_id,
            dialogue=session.recent_dialogue,
            actions=session.recent_actions,
            open_tasks=tuple(t.title for t in tasks),
            interruptions=interruption_lines(session),
            resume_point=session.resume_point,
            close_reason=reason.value,
            previous=digest_of(received) if received is not None else None,
        )
        handoff = await self._handoffs.write(request, now=now, use_model=use_model)
        session = await self._move(session, SessionState.HANDOFF_WRITTEN, now)
        self._closed[reason.value] += 1
        return ClosedSession(session, handoff, transcript)

    async def _archive(self, session: Session, now: float) -> TranscriptArchive:
        """The whole transcript: the chat's messages of this topic since the session began."""
        messages = await self._store.topic_messages(
            session.topic_thread_id, chat_id=session.chat_id, limit=self._settings.transcript_limit
        )
        lines = [
            f"[{_stamp(m.time)}] {_mark(m)}{m.sender_name or m.sender_id}: {m.text}"
            for m in messages
            if m.chat_id == session.chat_id and session.started_at <= m.time <= now
        ]
        if not lines:
            lines = list(session.recent_dialogue)
        archive = TranscriptArchive(
            session_id=session.id,
            topic_thread_id=session.topic_thread_id,
            chat_id=session.chat_id,
            content="\n".join(lines),
            created_at=now,
        )
        await self._store.save_transcript(archive)
        return archive

    async def sweep(self, now: float) -> list[ClosedSession]:
        """Mark silent sessions idle and close those silent past the timeout (call periodically).

        Only a session the listing shows due for a change is read again (under its lock): a turn can
        only make a session less silent (``updated_at`` never goes back), so one the listing shows
        recent is left alone without a read. A sweep's reads are the sessions it acts on, not every
        open session of every chat (hundreds in a busy bot, every minute)."""
        closed: list[ClosedSession] = []
        for listed in await self._store.list_sessions(states=OPEN_SESSION_STATES):
            if not self._sweep_due(listed, now):
                continue
            async with self._locked(listed.topic_thread_id, listed.chat_id):
                session = await self._store.get_session(listed.id)  # a turn may have come meanwhile
                if session is None or session.state not in OPEN_SESSION_STATES:
                    continue
                if now - session.updated_at > self._settings.idle_timeout:
                    closed.append(await self._close(session, now=now, reason=CloseReason.IDLE))
                elif self._sweep_due(session, now):
                    # Keep updated_at: idleness is measured from the last turn, not from this mark.
                    await self._store.upsert_session(replace(session, state=SessionState.IDLE))
        return closed

    def _sweep_due(self, session: Session, now: float) -> bool:
        """Whether :meth:`sweep` closes ``session`` or marks it idle, as of ``now``."""
        silent = now - session.updated_at
        if silent > self._settings.idle_timeout:
            return True
        return silent > self._settings.idle_after and session.state is SessionState.ACTIVE

    async def close_all(
        self, now: float, *, reason: CloseReason = CloseReason.SHUTDOWN, use_model: bool = False
    ) -> list[ClosedSession]:
        """Close every open session (a clean shutdown); the fallback digest by default, for speed."""
        closed: list[ClosedSession] = []
        for listed in await self._store.list_sessions(states=OPEN_SESSION_STATES):
            async with self._locked(listed.topic_thread_id, listed.chat_id):
                session = await self._store.get_session(listed.id)
                if session is not None and session.state in OPEN_SESSION_STATES:
                    closed.append(await self._close(session, now=now, reason=reason, use_model=use_model))
        return closed

    async def mark_open_sessions_interrupted(self, now: float) -> int:
        """On start: sessions a killed process left active or idle become interrupted (process exit)."""
        count = 0
        for session in await self._store.list_sessions(states=(SessionState.ACTIVE, SessionState.IDLE)):
            record = {"kind": InterruptKind.PROCESS_EXIT.value, "at": now, "note": "进程退出，会话未正常关闭"}
            interruptions = (*session.interruptions, record)[-self._settings.interruptions_max :]
            await self._store.upsert_session(
                replace(session, state=SessionState.INTERRUPTED, interruptions=interruptions)
            )
            count += 1
        self._counts["interrupted"] += count
        return count

    def statistics(self) -> SessionManagerStatistics:
        return SessionManagerStatistics(
            created=self._counts["created"],
            resumed=self._counts["resumed"],
            interrupted=self._counts["interrupted"],
            closed=tuple(sorted(self._closed.items())),
            handoffs_delivered=self._handoffs.statistics().delivered,
        )
