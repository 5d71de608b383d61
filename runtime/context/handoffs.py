"""HandoffManager: what a closing session hands to the next session of its topic thread (design/000 §9).

A handoff is not a transcript: a summary of where things stand, the unfinished items, the risks and
a suggestion where to resume — only what continuing needs. The model's compression role writes it
through a :class:`Summarizer`; when there is none, or it fails, times out or answers with nothing,
:func:`fallback_digest` writes one deterministically from the session's own record, so a session never
closes without a handoff.

Delivery: session N's handoff is stored with ``to_session_id = None``; when session N+1 of the same
topic thread opens in the same chat, :meth:`HandoffManager.deliver` addresses the handoff to it, and
the packets of session N+1 carry it in their HandoffSlot. Handoffs never cross chats.

Every packet of an ongoing session carries its handoff, so :meth:`HandoffManager.for_session` keeps
what it read (or knows: a session just opened without one has none) until a handoff of the thread is
saved. That is the same answer as reading again: a thread's handoffs change only by
:meth:`HandoffManager.write` and :meth:`HandoffManager.deliver` (one process serves an account's
store), both of which forget the thread's answers once saved, and a read that overlapped a save keeps
nothing.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import anyio
import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.context.deferred import DeferredWrites, write
from runtime.context.packet import HandoffSlot
from runtime.kernel.ids import IdFactory, counter_ids
from runtime.store.records import Handoff, Session
from runtime.store.roles import ContextRows

__all__ = [
    "HandoffDigest",
    "HandoffManager",
    "HandoffManagerStatistics",
    "HandoffRequest",
    "Summarizer",
    "digest_of",
    "fallback_digest",
    "handoff_slot",
    "parse_digest",
]

log = structlog.get_logger("greywind.context")

_MAX_ITEMS = 5
_MAX_TEXT = 400
_LINE = 60


@dataclass(frozen=True, slots=True)
class HandoffRequest:
    """What the summarizer sees of a closing session: its record, not the whole history."""

    session_id: str
    topic_thread_id: str
    thread_title: str
    chat_id: str
    dialogue: tuple[str, ...]
    actions: tuple[str, ...] = ()
    open_tasks: tuple[str, ...] = ()
    interruptions: tuple[str, ...] = ()
    resume_point: str | None = None
    close_reason: str = "idle"
    # The handoff this session itself received: what it did not get to is still owed.
    previous: HandoffDigest | None = None


@dataclass(frozen=True, slots=True)
class HandoffDigest:
    """The format of design/000 §9.5."""

    summary: str
    unfinished_items: tuple[str, ...] = ()
    risks: tuple[str, ...] = ()
    resume_suggestion: str = ""


class Summarizer(Protocol):
    """The model's compression role, writing a handoff digest (adapters use :func:`parse_digest`)."""

    async def summarize_handoff(self, request: HandoffRequest) -> HandoffDigest: ...


class _DigestModel(BaseModel):
    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1)
    unfinished_items: list[str] = []
    risks: list[str] = []
    resume_suggestion: str = ""


def parse_digest(data: str | Mapping[str, Any]) -> HandoffDigest:
    """A model's JSON answer as a digest; ``ValueError`` when it is not one (no summary, bad shape)."""
    try:
        raw = json.loads(data) if isinstance(data, str) else dict(data)
        model = _DigestModel.model_validate(raw)
    except (ValueError, ValidationError, TypeError) as exc:
        raise ValueError(f"not a handoff digest: {exc}") from None
    return HandoffDigest(
        summary=model.summary.strip(),
        unfinished_items=tuple(i.strip() for i in model.unfinished_items if i.strip()),
        risks=tuple(r.strip() for r in model.risks if r.strip()),
        resume_suggestion=model.resume_suggestion.strip(),
    )


def _short(text: str, limit: int = _LINE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fallback_digest(request: HandoffRequest) -> HandoffDigest:
    """A digest from the session record alone: no model, same input → same digest.

    What the session received from its predecessor and did not move on is carried forward, so a
    session that closes without progress does not break the chain."""
    previous = request.previous
    last = [_short(line) for line in request.dialogue[-3:]]
    if last:
        summary = f"「{request.thread_title}」最近的对话：" + "；".join(last)
    elif previous is not None:
        summary = f"{previous.summary}（之后的一次会话没有新进展）"
    else:
        summary = f"「{request.thread_title}」本次会话没有对话"
    unfinished = list(request.open_tasks)
    if request.resume_point and request.resume_point not in unfinished:
        unfinished.append(request.resume_point)
    if previous is not None:
        unfinished += [item for item in previous.unfinished_items if item not in unfinished]
    risks = [f"会话曾被打断：{_short(i)}" for i in request.interruptions[-2:]]
    risks.append("这份交接由规则生成，没有经过模型整理，细节可能不全")
    suggestion = request.resume_point or (request.open_tasks[0] if request.open_tasks else "")
    if not suggestion and last:
        suggestion = f"从最后一句接着聊：{last[-1]}"
    if not suggestion and previous is not None:
        suggestion = previous.resume_suggestion
    return HandoffDigest(
        summary=summary,
        unfinished_items=tuple(unfinished),
        risks=tuple(risks),
        resume_suggestion=suggestion,
    )


def _bounded(digest: HandoffDigest) -> HandoffDigest:
    return HandoffDigest(
        summary=_short(digest.summary, _MAX_TEXT),
        unfinished_items=tuple(_short(i, 120) for i in digest.unfinished_items[:_MAX_ITEMS]),
        risks=tuple(_short(r, 120) for r in digest.risks[:_MAX_ITEMS]),
        resume_suggestion=_short(digest.resume_suggestion, 200),
    )


def digest_of(handoff: Handoff) -> HandoffDigest:
    return HandoffDigest(
        summary=handoff.summary,
        unfinished_items=handoff.unfinished_items,
        risks=handoff.risks,
        resume_suggestion=handoff.resume_suggestion,
    )


def handoff_slot(handoff: Handoff) -> HandoffSlot:
    return HandoffSlot(
        from_session_id=handoff.from_session_id,
        to_session_id=handoff.to_session_id,
        summary=handoff.summary,
        unfinished_items=handoff.unfinished_items,
        risks=handoff.risks,
        resume_suggestion=handoff.resume_suggestion,
    )


@dataclass(frozen=True, slots=True)
class HandoffManagerStatistics:
    written_by_model: int
    written_by_fallback: int
    model_failures: int
    delivered: int


class HandoffManager:
    """Writes handoffs (model first, deterministic fallback) and delivers them to the next session."""

    __slots__ = (
        "_addressed",
        "_delivered",
        "_failures",
        "_fallback",
        "_ids",
        "_model",
        "_saves",
        "_store",
        "_summarizer",
        "_timeout",
    )

    def __init__(
        self,
        store: ContextRows,
        *,
        summarizer: Summarizer | None = None,
        timeout: float = 20.0,
        ids: IdFactory | None = None,
    ) -> None:
        self._store = store
        self._summarizer = summarizer
        self._timeout = timeout
        self._ids = ids or counter_ids()
        self._model = 0
        self._fallback = 0
        self._failures = 0
        self._delivered = 0
        # Per topic thread, per session: the handoff addressed to it (None: none), as last read.
        self._addressed: dict[str, dict[str, Handoff | None]] = {}
        self._saves = 0  # handoff saves begun: a read that saw one begin keeps nothing

    async def write(self, request: HandoffRequest, *, now: float, use_model: bool = True) -> Handoff:
        """Write session ``request.session_id``'s handoff. Never fails for want of a model."""
        digest: HandoffDigest | None = None
        if use_model and self._summarizer is not None:
            digest = await self._ask_model(request)
        written_by = "model" if digest is not None else "fallback"
        digest = _bounded(digest if digest is not None else fallback_digest(request))
        handoff = Handoff(
            id=self._ids("handoff"),
            from_session_id=request.session_id,
            topic_thread_id=request.topic_thread_id,
            summary=digest.summary,
            created_at=now,
            unfinished_items=digest.unfinished_items,
            risks=digest.risks,
            resume_suggestion=digest.resume_suggestion,
            written_by=written_by,
        )
        await self._save(handoff)
        if written_by == "model":
            self._model += 1
        else:
            self._fallback += 1
        return handoff

    async def _ask_model(self, request: HandoffRequest) -> HandoffDigest | None:
        assert self._summarizer is not None
        try:
            with anyio.fail_after(self._timeout):
                digest = await self._summarizer.summarize_handoff(request)
        except Exception as exc:  # a failing model must not keep a session from closing
            self._failures += 1
            log.warning("handoff_model_failed", session_id=request.session_id, error=repr(exc))
            return None
        if not isinstance(digest, HandoffDigest) or not digest.summary.strip():
            self._failures += 1
            log.warning("handoff_model_empty", session_id=request.session_id)
            return None
        return digest

    async def pending_for(self, topic_thread_id: str, chat_id: str) -> Handoff | None:
        """The newest handoff of the thread written in ``chat_id`` and not yet delivered."""
        for handoff in await self._store.list_handoffs(topic_thread_id, limit=10):
            source = await self._store.get_session(handoff.from_session_id)
            if source is None or source.chat_id != chat_id:
                continue
            # Only the chat's newest handoff counts: once delivered, older ones are superseded.
            return handoff if handoff.to_session_id is None else None
        return None

    async def deliver(
        self, handoff: Handoff, to_session_id: str, *, writes: DeferredWrites | None = None
    ) -> Handoff:
        """``handoff`` given to the session ``to_session_id``; with ``writes``, saved there."""
        delivered = replace(handoff, to_session_id=to_session_id)
        await write(writes, "session", functools.partial(self._save, delivered))
        self._delivered += 1
        return delivered

    async def _save(self, handoff: Handoff) -> None:
        """Save ``handoff``; its thread's remembered answers are forgotten (whether or not it saved)."""
        self._saves += 1
        try:
            await self._store.save_handoff(handoff)
        finally:
            self._saves += 1
            self._addressed.pop(handoff.topic_thread_id, None)

    def opened_without(self, session: Session) -> None:
        """``session`` was just made and given no handoff: none is addressed to it (nothing to read)."""
        self._remember(session, None, self._saves)

    def _remember(self, session: Session, handoff: Handoff | None, saves: int) -> None:
        if saves != self._saves:
            return  # a save began or ended meanwhile: the answer may be stale
        if len(self._addressed) > 4096:
            self._addressed.clear()
        self._addressed.setdefault(session.topic_thread_id, {})[session.id] = handoff

    async def for_session(self, session: Session) -> Handoff | None:
        """The handoff addressed to ``session`` (the one its packets carry), if any: among the thread's
        newest ten, read once until a handoff of the thread is saved."""
        known = self._addressed.get(session.topic_thread_id)
        if known is not None and session.id in known:
            return known[session.id]
        saves = self._saves
        found = None
        for handoff in await self._store.list_handoffs(session.topic_thread_id, limit=10):
            if handoff.to_session_id == session.id:
                found = handoff
                break
        self._remember(session, found, saves)
        return found

    def statistics(self) -> HandoffManagerStatistics:
        return HandoffManagerStatistics(
            written_by_model=self._model,
            written_by_fallback=self._fallback,
            model_failures=self._failures,
            delivered=self._delivered,
        )
