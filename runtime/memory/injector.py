"""MemoryInjector: design/001 ④'s compress → inject → refresh, one rolling summary per chat.

A *conversation* is a chat (``qq:<account>:group:<id>`` / ``...:private:<id>``): the summary is the
chat's long memory, read by the ContextBuilder through the ``SummaryProvider`` seam as
``summary(chat_id, topic_thread_id)`` (the same key ``runtime.context.builder.StoreSummaries`` reads).
Topic threads keep their own memory in the Context Runtime (thread summary, tasks, handoffs); they are
not split out of the chat summary.

Flow::

    reply path     note_round(chat, messages, now)  counters += 1 round, its tokens   (one row write)
                   └─ due? (triggers.py)            queued, never run here
    background     serve() / run_pending()          old summary + messages since covered_until
                   └─ router, role "compression"    → new summary (validated, trimmed) → SQLite
                                                    → compressed.json, injection-log.json
    next turn      summary(chat_id, ...)            the memory layer for the PromptAssembler

Compression never runs on the reply path: ``note_round`` only counts and queues; the lifespan's task
group runs :meth:`MemoryInjector.serve` (or a caller awaits :meth:`run_pending`). A model fault
(5xx, 429, timeout, a refused request) or an answer that is not a valid summary keeps the old summary,
logs the failure, and schedules a retry with exponential backoff (a 429's Retry-After is honoured when
longer). Counters live in the ``memory_summaries`` row and are reset only in the same write that
stores a new summary, so a restart neither compresses twice nor skips a due compression
(:meth:`resume` queues what was due when the process stopped).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio
import structlog

from runtime.context.packet import MemorySummarySlot
from runtime.context.tokens import TokenCounter, as_counter
from runtime.llm.errors import FallbackExhaustedError, LLMError, RateLimitedError
from runtime.llm.types import ChatResult
from runtime.memory.errors import CompressionFailedError, InvalidSummaryError
from runtime.memory.export import export_memory
from runtime.memory.prompt import compression_messages, select_transcript
from runtime.memory.settings import InjectorSettings
from runtime.memory.summary import (
    CompressedSummary,
    SummaryBody,
    iso_time,
    parse_summary_answer,
    summary_slot,
    summary_tokens,
    trim_summary,
)
from runtime.memory.triggers import (
    Counters,
    TriggerCheck,
    after_compression,
    due_reason,
    note_round,
    note_session_start,
)
from runtime.store.records import MemorySummary, StoredMessage
from runtime.store.roles import SummaryRows

__all__ = ["CompressionOutcome", "Compressor", "InjectorStatistics", "MemoryInjector", "SummaryListener"]

log = structlog.get_logger("greywind.memory")

# A noted reply and its stored copy differ in id and by the send's latency at most this much.
_SAME_MESSAGE_SECONDS = 10.0


class Compressor(Protocol):
    """The model access the injector needs: ``runtime.llm.ModelRouter`` fits."""

    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        role: Any = ...,
        chat_id: str | None = ...,
        temperature: float | None = ...,
        max_tokens: int | None = ...,
    ) -> ChatResult: ...


class SummaryListener(Protocol):
    """Told of each new summary with the messages it covered (user profiles learn preferences)."""

    async def learn_from_summary(
        self, conversation: str, body: SummaryBody, messages: Sequence[StoredMessage], now: float
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class CompressionOutcome:
    """One compression attempt: ``ok``, or the ``error`` that kept the old summary and ``retry_at``."""

    conversation: str
    ok: bool
    messages: int = 0
    omitted: int = 0
    summary_tokens: int = 0
    error: str | None = None
    retry_at: float | None = None


@dataclass(frozen=True, slots=True)
class InjectorStatistics:
    conversations: int
    rounds_noted: int
    triggers: tuple[tuple[str, int], ...]
    compressions: int
    failures: int
    queued: int
    next_due_at: float | None
    injections: int
    last_summary_tokens: int


@dataclass(slots=True)
class _Conversation:
    key: str
    document: CompressedSummary
    counters: Counters
    last_compressed_at: float | None
    log: deque[dict[str, Any]]
    buffer: deque[StoredMessage]
    lock: anyio.Lock = field(default_factory=anyio.Lock)  # guards the state, never held over a model call
    compressing: anyio.Lock = field(default_factory=anyio.Lock)
    attempts: int = 0
    logged: int = 0  # log entries ever appended, and how many of them the export files hold
    exported: int = 0


def _retry_after(exc: BaseException) -> float | None:
    """The longest Retry-After a 429 asked for, looking through the router's fallback chain."""
    causes = exc.failures if isinstance(exc, FallbackExhaustedError) else (exc,)
    asked = [c.retry_after for c in causes if isinstance(c, RateLimitedError) and c.retry_after]
    return max(asked, default=None)


def _counters(record: MemorySummary | None) -> Counters:
    if record is None:
        return Counters()
    return Counters(record.rounds_processed, record.rounds_since_compression, record.tokens_since_compression)


class MemoryInjector:
    """Counts rounds, compresses in the background, and serves the summary layer."""

    def __init__(
        self,
        store: SummaryRows,
        compressor: Compressor,
        *,
        settings: InjectorSettings | None = None,
        counter: object | None = None,
        clock: Callable[[], float] = time.time,
        data_dir: Path | None = None,
        listener: SummaryListener | None = None,
    ) -> None:
        """``counter`` counts tokens (a ``TokenEstimator`` or anything with ``count``); ``data_dir`` is
        ``GREYWIND_DATA_DIR`` for the debug exports (``None``: none written)."""
        self._store = store
        self._compressor = compressor
        self.settings = settings or InjectorSettings()
        self._counter: TokenCounter = as_counter(counter)
        self._clock = clock
        self._data_dir = data_dir
        self._listener = listener
        self._conversations: dict[str, _Conversation] = {}
        self._due: dict[str, float] = {}
        self._wakeup = anyio.Event()
        self._changed = anyio.Event()  # set (and replaced) whenever a new summary is stored
        self._rounds = self._compressions = self._failures = self._injections = 0
        self._last_tokens = 0
        self._triggers: Counter[str] = Counter()

    # -- the reply path ------------------------------------------------------------------------------

    async def note_round(
        self,
        conversation: str,
        messages: Sequence[StoredMessage] = (),
        *,
        now: float,
        tokens: int | None = None,
    ) -> TriggerCheck:
        """Count one round (the user's message(s) and the reply) and queue a compression when due.

        ``messages`` are held until the store has them, so a compression right after still sees them;
        ``tokens`` defaults to their estimated size.
        """
        try:
            conv = await self._load(conversation)
        except Exception:  # the reply path must not fail on its memory layer
            log.exception("memory.note_round_failed", conversation=conversation)
            return TriggerCheck(Counters(), None)
        async with conv.lock:
            size = tokens if tokens is not None else sum(self._counter.count(m.text) for m in messages)
            conv.buffer.extend(m for m in messages if m.chat_id == conversation)
            check = note_round(conv.counters, size, self.settings.triggers)
            conv.counters = check.counters
            self._rounds += 1
            if check.reason is not None and conversation not in self._due:
                rounds = check.counters.rounds_processed
                self._log(conv, now, "triggered", reason=check.reason.value, round=rounds)
            await self._save(conv, now)
        if check.reason is not None:
            self._queue(conv, now, check.reason.value)
        if conv.exported < conv.logged:
            await self._export(conv)  # the injections of the turn just answered
        return check

    async def note_session_start(self, conversation: str, *, now: float) -> TriggerCheck:
        """A session of this chat starts: compress what is uncompressed when the config forces it."""
        conv = await self._load(conversation)
        check = note_session_start(conv.counters, self.settings.triggers)
        if check.reason is not None:
            self._queue(conv, now, check.reason.value)
        return check

    async def summary(self, chat_id: str, topic_thread_id: str | None = None) -> MemorySummarySlot | None:
        """Layer 4 of design/001 for the ContextBuilder (its ``SummaryProvider``); ``None`` if empty."""
        if not self.settings.enabled:
            return None
        conv = await self._load(chat_id)
        if conv.document.summary.is_empty():
            return None
        slot = summary_slot(conv.document, self.settings.priority)
        if not slot.sections:
            return None
        self._injections += 1
        self._log(
            conv,
            self._clock(),
            "injected",
            version=conv.document.version,
            sections=[s.name for s in slot.sections],
        )
        return slot

    async def document(self, conversation: str) -> CompressedSummary:
        """The conversation's current summary document (empty before the first compression)."""
        return (await self._load(conversation)).document

    async def wait_summary(self, conversation: str, *, newer_than: int = 0) -> CompressedSummary:
        """Wait until the conversation's summary version passes ``newer_than``; returns that summary."""
        while True:
            document = (await self._load(conversation)).document
            if document.version > newer_than:
                return document
            changed = self._changed
            await changed.wait()

    async def counters(self, conversation: str) -> Counters:
        return (await self._load(conversation)).counters

    # -- the background job --------------------------------------------------------------------------

    def pending(self, now: float | None = None) -> tuple[str, ...]:
        """Conversations whose compression is due by ``now`` (all queued ones when ``now`` is None)."""
        ordered = sorted(self._due.items(), key=lambda kv: kv[1])
        return tuple(key for key, at in ordered if now is None or at <= now)

    def next_due_at(self) -> float | None:
        return min(self._due.values(), default=None)

    async def resume(self, now: float) -> int:
        """After a start: queue every stored conversation whose compression was due; returns how many."""
        queued = 0
        for record in await self._store.list_memory_summaries():
            conv = await self._load(record.conversation, record)
            reason = due_reason(conv.counters, self.settings.triggers)
            if reason is not None:
                self._queue(conv, now, reason.value)
                queued += 1
        return queued

    async def run_pending(self, now: float | None = None) -> list[CompressionOutcome]:
        """Run every compression due by ``now`` (the clock's time when omitted), one after another."""
        now = self._clock() if now is None else now
        return [await self._compress(key, now=now) for key in self.pending(now)]

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run compressions as they fall due, forever; for the lifespan's task group (cancel to stop)."""
        task_status.started()
        while True:
            self._wakeup = anyio.Event()
            try:
                await self.run_pending()
            except Exception:  # failures stay local; each compression already retries on its own
                log.exception("memory.serve_round_failed")
                await anyio.sleep(self.settings.retry_base)
            next_at = self.next_due_at()
            delay = None if next_at is None else max(0.0, next_at - self._clock())
            with anyio.move_on_after(delay):
                await self._wakeup.wait()

    async def compress_now(self, conversation: str) -> CompressionOutcome:
        """Compress at once (an admin command); :class:`CompressionFailedError` when it failed."""
        await self._load(conversation)
        outcome = await self._compress(conversation)
        if not outcome.ok:
            raise CompressionFailedError(conversation, RuntimeError(outcome.error or "unknown"))
        return outcome

    def statistics(self) -> InjectorStatistics:
        return InjectorStatistics(
            conversations=len(self._conversations),
            rounds_noted=self._rounds,
            triggers=tuple(sorted(self._triggers.items())),
            compressions=self._compressions,
            failures=self._failures,
            queued=len(self._due),
            next_due_at=self.next_due_at(),
            injections=self._injections,
            last_summary_tokens=self._last_tokens,
        )

    # -- compression ---------------------------------------------------------------------------------

    async def _compress(self, key: str, *, now: float | None = None) -> CompressionOutcome:
        """One compression at a time per conversation. With ``now`` (the queue's runs), one that another
        run has done meanwhile (``compress_now`` beside the background job) is not repeated."""
        conv = await self._load(key)
        async with conv.compressing:
            due_at = self._due.get(key)
            if now is not None and (due_at is None or due_at > now):
                return CompressionOutcome(key, ok=True)
            try:
                return await self._compress_once(conv)
            except Exception as exc:  # the store behind the transcript, a bug: retried like a model fault
                log.exception("memory.compression_crashed", conversation=key)
                return await self._failed(conv, exc)

    async def _compress_once(self, conv: _Conversation) -> CompressionOutcome:
        key = conv.key
        cfg = self.settings
        async with conv.lock:
            covered = conv.counters
            since = conv.document.covered_until
            old = conv.document.summary
            candidates = await self._transcript(conv, since)
        transcript = select_transcript(
            candidates,
            max_tokens=cfg.transcript_max_tokens,
            count=self._counter.count,
            utc_offset_hours=cfg.utc_offset_hours,
        )
        if not transcript.messages:
            # Rounds were counted but nothing is readable (all recalled, or the store lost them).
            async with conv.lock:
                conv.counters = after_compression(conv.counters, covered)
                self._settle(conv, self._clock())
                await self._save(conv, self._clock())
            return CompressionOutcome(key, ok=True)
        first = covered.rounds_processed - covered.rounds_since + 1
        request = compression_messages(
            old,
            transcript,
            first_round=first,
            last_round=covered.rounds_processed,
            utc_offset_hours=cfg.utc_offset_hours,
        )
        try:
            result = await self._compressor.chat(
                request, role="compression", chat_id=key, temperature=0.2, max_tokens=cfg.answer_max_tokens
            )
            body = parse_summary_answer(result.text)
        except (LLMError, InvalidSummaryError) as exc:
            return await self._failed(conv, exc)

        body, dropped = trim_summary(body, cfg.system_prompt_max_tokens, cfg.priority, self._counter.count)
        tokens = summary_tokens(body, cfg.priority, self._counter.count)
        now = self._clock()
        newest = max(m.time for m in candidates)
        async with conv.lock:
            conv.document = CompressedSummary(
                version=conv.document.version + 1,
                last_compressed_at=iso_time(now, cfg.utc_offset_hours),
                total_rounds_processed=covered.rounds_processed,
                covered_until=newest,
                summary=body,
            )
            conv.counters = after_compression(conv.counters, covered)
            conv.last_compressed_at = now
            conv.attempts = 0
            conv.buffer = deque((m for m in conv.buffer if m.time > newest), maxlen=cfg.buffer_max)
            self._settle(conv, now)
            self._compressions += 1
            self._last_tokens = tokens
            self._log(
                conv,
                now,
                "compressed",
                rounds=[first, covered.rounds_processed],
                messages=len(transcript.messages),
                omitted=transcript.omitted,
                summary_tokens=tokens,
                trimmed_items=dropped,
                provider=result.provider,
                model=result.model,
            )
            await self._save(conv, now)
            self._changed.set()
            self._changed = anyio.Event()
        log.info("memory.compressed", conversation=key, rounds=covered.rounds_processed, tokens=tokens)
        if self._listener is not None:
            try:
                await self._listener.learn_from_summary(key, body, transcript.messages, now)
            except Exception:
                log.exception("memory.listener_failed", conversation=key)
        await self._export(conv)
        return CompressionOutcome(key, True, len(transcript.messages), transcript.omitted, tokens)

    async def _failed(self, conv: _Conversation, exc: BaseException) -> CompressionOutcome:
        cfg = self.settings
        now = self._clock()
        async with conv.lock:
            conv.attempts += 1
            delay = min(cfg.retry_cap, cfg.retry_base * 2 ** (conv.attempts - 1))
            asked = _retry_after(exc)
            if asked is not None:
                delay = max(delay, min(asked, cfg.retry_cap))
            retry_at = now + delay
            self._due[conv.key] = retry_at
            self._failures += 1
            error = f"{type(exc).__name__}: {exc}"[:300]
            retry_in = round(delay, 3)
            self._log(conv, now, "compression_failed", error=error, attempt=conv.attempts, retry_in=retry_in)
            await self._save(conv, now)
        log.warning("memory.compression_failed", conversation=conv.key, error=error, retry_in=delay)
        await self._export(conv)
        return CompressionOutcome(conv.key, False, error=error, retry_at=retry_at)

    def _settle(self, conv: _Conversation, now: float) -> None:
        """After a compression: off the queue, unless rounds noted meanwhile made it due again."""
        self._due.pop(conv.key, None)
        reason = due_reason(conv.counters, self.settings.triggers)
        if reason is not None:
            self._queue(conv, now, reason.value)

    async def _transcript(self, conv: _Conversation, since: float | None) -> list[StoredMessage]:
        """Messages after the last summary: the store's, plus those noted but perhaps not yet flushed.

        ``since`` is inclusive: a message at exactly the cut-off may be sent twice, never skipped. A
        noted message is the same as a stored one with its id, or — the bot's replies are noted before
        the platform gives them an id — with its speaker side and text within a few seconds.
        """
        stored = await self._store.recent_messages(conv.key, limit=self.settings.transcript_fetch_max)
        found = {m.message_id: m for m in stored if since is None or m.time >= since}
        seen: dict[tuple[bool, str], list[float]] = {}
        for message in found.values():
            seen.setdefault((message.from_self, message.text.strip()), []).append(message.time)
        for message in conv.buffer:
            if (since is not None and message.time < since) or message.message_id in found:
                continue
            times = seen.get((message.from_self, message.text.strip()), [])
            if any(abs(t - message.time) <= _SAME_MESSAGE_SECONDS for t in times):
                continue
            found[message.message_id] = message
        return sorted(found.values(), key=lambda m: (m.time, m.message_id))

    # -- state ---------------------------------------------------------------------------------------

    def _queue(self, conv: _Conversation, now: float, reason: str) -> None:
        if conv.key not in self._due:
            self._due[conv.key] = now
            self._triggers[reason] += 1
            self._wakeup.set()

    def _log(self, conv: _Conversation, now: float, event: str, **fields: Any) -> None:
        conv.log.append({"at": iso_time(now, self.settings.utc_offset_hours), "event": event, **fields})
        conv.logged += 1

    async def _load(self, key: str, record: MemorySummary | None = None) -> _Conversation:
        conv = self._conversations.get(key)
        if conv is not None:
            return conv
        if record is None:
            record = await self._store.get_memory_summary(key)
        document = CompressedSummary()
        if record is not None and record.summary:
            try:
                document = CompressedSummary.from_json(record.summary)
            except ValueError as exc:  # a hand-edited row: start a fresh summary, keep the counters
                log.warning("memory.stored_summary_invalid", conversation=key, error=repr(exc))
        entries = record.injection_log if record is not None else ()
        loaded = _Conversation(
            key=key,
            document=document,
            counters=_counters(record),
            last_compressed_at=record.last_compressed_at if record is not None else None,
            log=deque((dict(e) for e in entries), maxlen=self.settings.log_max),
            buffer=deque(maxlen=self.settings.buffer_max),
        )
        return self._conversations.setdefault(key, loaded)  # a concurrent load may have won

    async def _save(self, conv: _Conversation, now: float) -> None:
        """Write the row; a store fault is logged (the next write carries the same state)."""
        c = conv.counters
        record = MemorySummary(
            conversation=conv.key,
            version=conv.document.version,
            summary=conv.document.to_json(),
            rounds_processed=c.rounds_processed,
            rounds_since_compression=c.rounds_since,
            tokens_since_compression=c.tokens_since,
            last_compressed_at=conv.last_compressed_at,
            updated_at=now,
            injection_log=tuple(conv.log),
        )
        try:
            await self._store.upsert_memory_summary(record)
        except Exception:
            log.exception("memory.save_failed", conversation=conv.key)

    async def _export(self, conv: _Conversation) -> None:
        if self._data_dir is not None:
            conv.exported = conv.logged
            await export_memory(self._data_dir, conv.key, conv.document.to_json(), list(conv.log))
