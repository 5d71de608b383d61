"""A kernel's events, budgets, lexicon and threads go through SQLite and come back into a fresh kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.kernel.kernel import Kernel
from runtime.kernel.lexicon.terms import LexiconKey, LexiconScope, TermStatus
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.store.kernel_state import (
    bot_event,
    event_record,
    keyword_snapshots,
    restore_kernel,
    save_lexicon_changes,
    term_record,
)
from runtime.store.records import SpeechRecord, StoredMessage
from runtime.store.sqlite import SqliteStore

pytestmark = pytest.mark.asyncio

G1 = "group:1"


async def test_kernel_state_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "greywind.sqlite3"
    before = Kernel(now=1_000.0)
    reminder = before.schedule_activation(
        "reminder",
        G1,
        now=1_000.0,
        not_before=1_060.0,
        deadline=1_600.0,
        priority=0.4,
        payload={"text": "喝水"},
    )
    before.record_speech(G1, 1_010.0)
    key = LexiconKey(LexiconScope.GROUP, G1)
    before.lexicon.add(key, "原神", now=1_000.0, aliases=("genshin",), weight=0.6, confidence=0.7)
    before.lexicon.add(key, "广告", now=1_000.0, status=TermStatus.SUPPRESSED)
    blocked_before = before.budgets.can_speak(G1, 1_011.0)

    store = await SqliteStore.open(path)
    await store.write([event_record(e) for e in before.events.list()])
    await store.write([SpeechRecord(G1, 1_010.0)])
    await save_lexicon_changes(store, before.lexicon.take_changes())
    await store.close()

    store = await SqliteStore.open(path)
    try:
        state = await store.load_runtime_state(now=1_011.0)
    finally:
        await store.close()
    after = Kernel(now=1_011.0)
    report = restore_kernel(after, state, now=1_011.0)

    assert report.events == 1
    assert after.budgets.can_speak(G1, 1_011.0) == blocked_before
    restored = {(str(s.key), t.text): t for s in after.lexicon.snapshot() for t in s.terms}
    original = {(str(s.key), t.text): t for s in before.lexicon.snapshot() for t in s.terms}
    assert restored[(str(key), "原神")] == original[(str(key), "原神")]
    assert restored[(str(key), "广告")].status is TermStatus.SUPPRESSED
    # Both kernels now act alike: the reminder waits out the restored budget (90 s after the
    # speech at 1010), then fires once.
    for kernel in (before, after):
        assert kernel.due(1_061.0) == []
        assert kernel.scheduler.next_at() == 1_100.0
        due = kernel.due(1_101.0)
        assert [(a.event.id, a.outcome.value, a.event.payload["text"]) for a in due] == [
            (reminder.id, "ready", "喝水")
        ]


async def test_event_and_term_conversions_round_trip() -> None:
    kernel = Kernel(now=5.0)
    event = kernel.schedule_activation("wait", G1, now=5.0, not_before=9.0, thread_id="th-1")
    assert bot_event(event_record(event)) == event
    key = LexiconKey(LexiconScope.GLOBAL, "")
    kernel.lexicon.add(key, "灰风", now=5.0, status=TermStatus.PINNED)
    [snapshot] = [s for s in kernel.lexicon.snapshot() if s.key == key]
    records = [term_record(key, t) for t in snapshot.terms]
    assert records[0].pinned
    assert keyword_snapshots(records) == [snapshot]


async def test_a_reply_after_a_restart_joins_the_thread_stored_before_it(tmp_path: Path) -> None:
    path = tmp_path / "greywind.sqlite3"
    before = Kernel(now=1_000.0)
    said = [
        ChatMessage("1", ChatKind.GROUP, "1", "alice", "alice", 1_000.0, "周末去哪里爬山比较好"),
        ChatMessage("2", ChatKind.GROUP, "1", "bob", "bob", 1_020.0, "显卡驱动又崩了，蓝屏"),
        ChatMessage("3", ChatKind.GROUP, "1", "dave", "dave", 1_030.0, "重装驱动试试", reply_to="2"),
    ]
    results = [before.ingest(m) for m in said]
    hike, gpu = results[0].thread.thread_id, results[1].thread.thread_id
    assert hike != gpu

    store = await SqliteStore.open(path)
    await store.write(
        [StoredMessage.from_chat_message(r.message, thread_id=r.thread.thread_id) for r in results]
    )
    await store.close()

    store = await SqliteStore.open(path)
    try:
        state = await store.load_runtime_state(now=1_100.0)
    finally:
        await store.close()
    after = Kernel(now=1_100.0)
    report = restore_kernel(after, state, now=1_100.0)

    assert report.thread_messages == 3
    reply = ChatMessage("4", ChatKind.GROUP, "1", "carol", "carol", 1_110.0, "香山吧", reply_to="1")
    result = after.ingest(reply)
    assert result.thread.thread_id == hike
    assert result.thread.reason == "reply"
    assert result.thread.thread.participants == ("alice", "carol")
    # The other conversation is still there under its own id, and a new one gets a fresh id.
    assert after.threads.thread_of(G1, "3") == gpu
    fresh = after.ingest(ChatMessage("5", ChatKind.GROUP, "1", "erin", "erin", 2_000.0, "有人看球赛吗"))
    assert fresh.thread.created
    assert fresh.thread.thread_id not in {hike, gpu}


async def test_saving_thousands_of_changed_terms_lets_the_loop_serve_meanwhile(tmp_path: Path) -> None:
    import asyncio

    from runtime.kernel.lexicon.terms import KeywordTerm, LexiconChanges
    from runtime.store.kernel_state import save_lexicon_changes

    key = LexiconKey(LexiconScope.GROUP, "group:1")
    changes = LexiconChanges(tuple((key, KeywordTerm(f"词{n}", source="learned")) for n in range(3_000)), ())
    turns = 0

    async def other_chat() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    store = await SqliteStore.open(tmp_path / "greywind.db")
    try:
        ticker = asyncio.get_running_loop().create_task(other_chat())
        await asyncio.sleep(0)
        before = turns

        class Counting:
            async def save_lexicon_terms(self, records: list[object]) -> None:
                self.during = turns - before  # turns the other task had while the records were made
                await store.save_lexicon_terms(records)  # type: ignore[arg-type]

        counting = Counting()
        assert await save_lexicon_changes(counting, changes) == 3_000  # type: ignore[arg-type]
        ticker.cancel()
        assert counting.during >= 3_000 // 256
        assert len(await store.load_lexicon_terms()) == 3_000
    finally:
        await store.close()
