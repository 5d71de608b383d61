"""The kernel's values to store records and back, and putting a restored ``RuntimeState`` into a kernel.

The kernel never imports the store; this module is the bridge, used by whoever owns both (the
lifespan). Events keep every ``BotEvent`` field; lexicon terms keep every ``KeywordTerm`` field
(the ones without a column travel in ``extra``), so a restart restores the lexicon exactly. Recent
messages carry their conversation thread ids back into the ThreadTracker.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runtime.kernel.events import BotEvent, EventState
from runtime.kernel.lexicon.terms import (
    KeywordSnapshot,
    KeywordTerm,
    LexiconChanges,
    LexiconKey,
    LexiconScope,
    TermStatus,
)
from runtime.kernel.message import ChatKey, ChatMessage
from runtime.kernel.threads import RestoredMessage
from runtime.store.records import EventRecord, LexiconTermRecord, RuntimeState, SpeechRecord, StoredMessage

if TYPE_CHECKING:
    from runtime.kernel.kernel import Kernel
    from runtime.store.roles import LexiconRows

# Term records made per turn of the event loop when saving lexicon changes.
RECORDS_PER_TURN = 256


def event_record(event: BotEvent) -> EventRecord:
    return EventRecord.from_event(event)


def bot_event(record: EventRecord) -> BotEvent:
    return BotEvent(
        id=record.id,
        kind=record.kind,
        chat_id=record.chat_id,
        thread_id=record.thread_id,
        actor_ids=record.actor_ids,
        evidence_message_ids=record.evidence_message_ids,
        created_at=record.created_at,
        updated_at=record.updated_at,
        not_before=record.not_before,
        deadline=record.deadline,
        priority=record.priority,
        state=EventState(record.state),
        payload=dict(record.payload),
    )


def term_record(key: LexiconKey, term: KeywordTerm) -> LexiconTermRecord:
    return LexiconTermRecord(
        scope=key.scope.value,
        owner=key.owner,
        term=term.text,
        weight=term.weight,
        pinned=term.status is TermStatus.PINNED,
        suppressed=term.status is TermStatus.SUPPRESSED,
        source=term.source,
        created_at=term.first_seen_at,
        updated_at=term.last_seen_at,
        expires_at=term.expires_at,
        extra={
            "aliases": list(term.aliases),
            "confidence": term.confidence,
            "status": term.status.value,
            "decayed_at": term.decayed_at,
        },
    )


def keyword_term(record: LexiconTermRecord) -> KeywordTerm:
    extra = record.extra
    if "status" in extra:
        status = TermStatus(str(extra["status"]))
    else:
        status = (
            TermStatus.SUPPRESSED
            if record.suppressed
            else TermStatus.PINNED
            if record.pinned
            else TermStatus.ACTIVE
        )
    decayed = extra.get("decayed_at")
    return KeywordTerm(
        text=record.term,
        aliases=tuple(str(a) for a in extra.get("aliases", ())),
        weight=record.weight,
        confidence=float(extra.get("confidence", 1.0)),
        source=record.source,
        first_seen_at=record.created_at,
        last_seen_at=record.updated_at,
        expires_at=record.expires_at,
        status=status,
        decayed_at=None if decayed is None else float(decayed),
    )


def keyword_snapshots(records: Iterable[LexiconTermRecord]) -> list[KeywordSnapshot]:
    """Stored terms grouped back into the lexicon's per-key snapshots."""
    by_key: dict[LexiconKey, list[KeywordTerm]] = defaultdict(list)
    for record in records:
        by_key[LexiconKey(LexiconScope(record.scope), record.owner)].append(keyword_term(record))
    return [KeywordSnapshot(key, tuple(terms)) for key, terms in by_key.items()]


async def save_lexicon_changes(store: LexiconRows, changes: LexiconChanges) -> int:
    """Bring the stored lexicon up to date with ``DynamicLexicon.take_changes()``; returns rows touched.

    The records are made ``RECORDS_PER_TURN`` at a time with the loop let go between: after a
    learning batch or a decay slice thousands of terms change at once."""
    records: list[LexiconTermRecord] = []
    for n, (key, term) in enumerate(changes.changed, 1):
        records.append(term_record(key, term))
        if n % RECORDS_PER_TURN == 0:
            await asyncio.sleep(0)
    await store.save_lexicon_terms(records)
    for key, text in changes.removed:
        await store.delete_lexicon_term(key.scope.value, key.owner, text)
    return len(changes.changed) + len(changes.removed)


def speech_pairs(speeches: Mapping[str, Sequence[SpeechRecord]]) -> dict[str, list[tuple[float, bool]]]:
    return {chat: [(s.time, s.forced) for s in items] for chat, items in speeches.items()}


def chat_message(stored: StoredMessage) -> ChatMessage:
    """The kernel's message back from a stored one (a private message always addressed the bot)."""
    key = ChatKey.parse(stored.chat_id)
    return ChatMessage(
        message_id=stored.message_id,
        chat_kind=key.kind,
        chat_ident=key.ident,
        platform=key.platform,
        account=key.account,
        sender_id=stored.sender_id,
        sender_name=stored.sender_name,
        time=stored.time,
        text=stored.text,
        mentions=stored.mentions,
        reply_to=stored.reply_to,
        addressed=stored.addressed or key.is_private,
        from_self=stored.from_self,
        sent_elsewhere=stored.sent_elsewhere,
    )


def restored_messages(messages: Iterable[StoredMessage]) -> list[RestoredMessage]:
    """Stored messages that went to a conversation thread, as the ThreadTracker restores them."""
    return [RestoredMessage(chat_message(m), m.thread_id) for m in messages if m.thread_id is not None]


@dataclass(frozen=True, slots=True)
class KernelRestore:
    events: int
    chats_with_speeches: int
    lexicon_keys: int
    thread_messages: int = 0  # recent messages put back into their conversation threads


def restore_kernel(kernel: Kernel, state: RuntimeState, *, now: float) -> KernelRestore:
    """Events (and so the scheduler), budgets, the lexicon and conversation threads, into a fresh kernel."""
    snapshots = keyword_snapshots(state.lexicon_terms)
    kernel.lexicon.restore(snapshots)
    kernel.restore_speeches(speech_pairs(state.speeches))
    restored = kernel.restore_events((bot_event(r) for r in state.events), now)
    threaded = kernel.restore_threads(restored_messages(state.recent_messages), now)
    return KernelRestore(
        events=restored,
        chats_with_speeches=len(state.speeches),
        lexicon_keys=len(snapshots),
        thread_messages=threaded,
    )
