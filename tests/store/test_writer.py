"""The writer task: batching, back-pressure, retries, rejected records, shutdown flush."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from runtime.store.errors import StoreClosedError, StoreWriteError, WriterError
from runtime.store.memory import MemoryStore
from runtime.store.records import EventRecord, SpeechRecord, StoredMessage, UserProfile, WriteItem
from runtime.store.sqlite import SqliteStore
from runtime.store.writer import StoreWriter, WriterFullError
from runtime.urgency import AddressedWork, addressed

pytestmark = pytest.mark.asyncio

G1 = "group:1"


def msg(i: int) -> StoredMessage:
    return StoredMessage(G1, str(i), "u1", "Alice", float(i), f"消息{i}")


class GatedStore(MemoryStore):
    """Writes wait for the gate; each write's size is recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.sizes: list[int] = []

    async def write(self, items: Sequence[WriteItem]) -> None:
        await self.gate.wait()
        self.sizes.append(len(items))
        await super().write(items)


class FlakyStore(MemoryStore):
    """The first ``fail`` writes fail like a full disk."""

    def __init__(self, fail: int) -> None:
        super().__init__()
        self.fail = fail

    async def write(self, items: Sequence[WriteItem]) -> None:
        if self.fail > 0:
            self.fail -= 1
            raise StoreWriteError("database or disk is full")
        await super().write(items)


async def stored_ids(store: MemoryStore) -> list[str]:
    return [m.message_id for m in await store.list_messages(G1, limit=100_000)]


async def test_one_transaction_per_window() -> None:
    store = GatedStore()
    async with StoreWriter(store, flush_interval=5.0) as writer:
        for i in range(10):
            await writer.put(msg(i))
        await writer.flush()
        assert store.sizes == [10]
        assert await stored_ids(store) == [str(i) for i in range(10)]
    await store.close()


async def test_items_are_committed_within_an_interval_without_flush() -> None:
    store = MemoryStore()
    async with StoreWriter(store, flush_interval=0.05) as writer:
        await writer.put(msg(1))
        for _ in range(200):
            if await store.get_message(G1, "1"):
                break
            await asyncio.sleep(0.01)
        assert await store.get_message(G1, "1") is not None
        assert writer.statistics().written == 1
    await store.close()


async def test_a_full_batch_is_committed_before_the_interval_ends() -> None:
    store = GatedStore()
    async with StoreWriter(store, flush_interval=30.0, flush_max_items=5) as writer:
        for i in range(5):
            await writer.put(msg(i))
        for _ in range(200):
            if store.sizes:
                break
            await asyncio.sleep(0.01)
        assert store.sizes == [5]
    await store.close()


async def test_full_queue_makes_producers_wait_and_loses_nothing() -> None:
    store = GatedStore()
    store.gate.clear()
    async with StoreWriter(store, flush_interval=0.01, flush_max_items=2, queue_max=2) as writer:
        for i in range(2):
            await writer.put(msg(i))
        await asyncio.sleep(0.05)  # the loop takes both and blocks on the gate
        for i in range(2, 4):
            await writer.put(msg(i))
        with pytest.raises(WriterFullError):
            writer.put_nowait(msg(99))
        blocked = asyncio.ensure_future(writer.put(msg(4)))
        await asyncio.sleep(0.05)
        assert not blocked.done()
        assert writer.statistics().queued == 2
        store.gate.set()
        await blocked
        await writer.flush()
    assert await stored_ids(store) == [str(i) for i in range(5)]
    await store.close()


async def test_failed_writes_are_retried_and_counted() -> None:
    store = FlakyStore(fail=3)
    async with StoreWriter(store, flush_interval=0.01, retry_backoff=0.01) as writer:
        for i in range(5):
            await writer.put(msg(i))
        await writer.flush()
        stats = writer.statistics()
    assert await stored_ids(store) == [str(i) for i in range(5)]
    assert stats.failures == 3
    assert stats.written == 5
    assert "disk is full" in (stats.last_error or "")
    await store.close()


async def test_a_record_the_store_cannot_take_is_rejected_alone(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "greywind.sqlite3")
    bad = EventRecord("ev-1", "m", G1, None, (), (), 1.0, 1.0, 1.0, None, 0.0, "captured", {"x": object()})
    try:
        async with StoreWriter(store, flush_interval=1.0) as writer:
            await writer.put(msg(1))
            await writer.put(bad)
            await writer.put(SpeechRecord(G1, 2.0))
            await writer.put(msg(2))
            await writer.flush()
            stats = writer.statistics()
        assert stats.rejected == 1
        assert stats.written == 3
        assert [m.message_id for m in await store.list_messages(G1)] == ["1", "2"]
        assert len(await store.recent_speeches(G1, since=0.0)) == 1
        assert await store.get_event("ev-1") is None
    finally:
        await store.close()


async def test_close_flushes_what_is_queued() -> None:
    store = MemoryStore()
    writer = StoreWriter(store, flush_interval=60.0)
    async with writer:
        for i in range(3):
            writer.put_nowait(msg(i))
    assert await stored_ids(store) == ["0", "1", "2"]
    assert writer.statistics().closed
    with pytest.raises(StoreClosedError):
        await writer.put(msg(9))
    await store.close()


async def test_close_without_a_running_loop_still_writes() -> None:
    store = MemoryStore()
    writer = StoreWriter(store)
    await writer.put(msg(1))
    await writer.aclose()
    assert await stored_ids(store) == ["1"]
    await store.close()


async def test_close_gives_up_loudly_when_the_store_keeps_failing() -> None:
    store = FlakyStore(fail=10_000)
    writer = StoreWriter(store, flush_interval=0.01, retry_backoff=0.01, close_timeout=0.1)
    await writer.put(msg(1))
    await writer.put(msg(2))
    with pytest.raises(WriterError, match="2 unwritten"):
        async with writer:
            await asyncio.sleep(0.05)
    assert writer.statistics().failures >= 2
    await store.close()


async def test_put_refuses_what_is_not_a_write_item() -> None:
    writer = StoreWriter(MemoryStore())
    with pytest.raises(TypeError):
        await writer.put("hello")  # type: ignore[arg-type]


async def test_a_full_disk_is_retried_until_space_returns(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "greywind.sqlite3")
    try:
        pages = (await store._one("PRAGMA page_count"))[0]
        # SQLite's own "database or disk is full", the error a full disk raises (on the write connection).
        await store._db.execute(f"PRAGMA max_page_count = {pages + 2}")
        filler = "满" * 2_000
        async with StoreWriter(
            store, flush_interval=0.01, retry_backoff=0.01, retry_backoff_max=0.05
        ) as writer:
            for i in range(40):
                await writer.put(StoredMessage(G1, str(i), "u1", "Alice", float(i), f"{i}{filler}"))
            for _ in range(300):
                if writer.statistics().failures >= 3:
                    break
                await asyncio.sleep(0.01)
            stats = writer.statistics()
            assert stats.failures >= 3
            assert "full" in (stats.last_error or "")
            await store._db.execute("PRAGMA max_page_count = 1073741823")
            await writer.flush()
        assert [m.message_id for m in await store.list_messages(G1)] == [str(i) for i in range(40)]
    finally:
        await store.close()


async def test_a_closed_store_stops_the_writer_loudly() -> None:
    store = MemoryStore()
    await store.close()
    writer = StoreWriter(store, flush_interval=0.01)
    await writer.put(msg(1))
    with pytest.raises(WriterError, match="1 unwritten"):
        async with writer:
            await asyncio.sleep(0.05)


async def test_close_cuts_a_long_backoff_short() -> None:
    store = FlakyStore(fail=10_000)
    writer = StoreWriter(store, flush_interval=0.01, retry_backoff=60.0, close_timeout=0.2)
    await writer.put(msg(1))
    loop = asyncio.get_running_loop()
    async with writer:
        await asyncio.sleep(0.05)  # the first write failed; the writer now backs off for a minute
        started = loop.time()
        with pytest.raises(WriterError, match="1 unwritten"):
            await writer.aclose()
    assert loop.time() - started < 5.0
    await store.close()


async def test_offer_never_waits_on_a_failing_store_and_counts_what_it_drops() -> None:
    store = FlakyStore(fail=1_000_000)
    writer = StoreWriter(store, flush_interval=0.01, queue_max=5, retry_backoff=0.01)
    task = asyncio.create_task(writer.run())
    try:
        accepted = [writer.offer(msg(i)) for i in range(20)]  # synchronous: nothing can wait here
        await asyncio.sleep(0.05)
        stats = writer.statistics()
        # The loop took one batch off the queue, so a few more than queue_max were accepted at most.
        assert 5 <= sum(accepted) <= 10
        assert stats.dropped == 20 - sum(accepted)
        assert stats.failing_since is not None
        assert "disk is full" in (stats.last_error or "")
    finally:
        started = asyncio.get_running_loop().time()
        with pytest.raises(WriterError) as lost, capture_logs() as logs:
            await writer.aclose(timeout=0.3)
        assert asyncio.get_running_loop().time() - started < 1.5
        drops = [line for line in logs if line["event"] == "store.writes_dropped"]
        assert drops[-1]["dropped_total"] == writer.statistics().dropped, "the log counts every drop"
        assert lost.value.unwritten == writer.unwritten > 0
        await asyncio.wait_for(task, 1.0)


async def test_room_waits_for_the_next_batch_of_a_slow_healthy_store() -> None:
    store = GatedStore()
    store.gate.clear()
    async with StoreWriter(store, flush_interval=0.01, flush_max_items=2, queue_max=2) as writer:
        for i in range(2):
            writer.offer(msg(i))
        await asyncio.sleep(0.05)  # the loop takes both and blocks on the gate
        for i in range(2, 4):
            assert writer.offer(msg(i))
        assert writer.crowded
        waiting = asyncio.ensure_future(writer.room(5.0))
        await asyncio.sleep(0.05)
        assert not waiting.done(), "a healthy store's room comes with its next batch"
        store.gate.set()
        assert await asyncio.wait_for(waiting, 1.0)
        assert writer.offer(msg(4))
        await writer.flush()
        assert writer.statistics().dropped == 0
    assert await stored_ids(store) == [str(i) for i in range(5)]
    await store.close()


async def test_room_is_not_waited_for_on_a_failing_store() -> None:
    store = FlakyStore(fail=1_000_000)
    writer = StoreWriter(store, flush_interval=0.01, flush_max_items=2, queue_max=2, retry_backoff=0.5)
    task = asyncio.create_task(writer.run())
    try:
        for i in range(2):
            writer.offer(msg(i))
        await asyncio.sleep(0.05)  # the loop took them; the store refuses them
        for i in range(2, 4):
            writer.offer(msg(i))
        assert writer.crowded
        started = time.monotonic()
        assert not await writer.room(5.0)
        assert time.monotonic() - started < 0.1
    finally:
        with pytest.raises(WriterError):
            await writer.aclose(timeout=0.1)
        await asyncio.wait_for(task, 1.0)


async def test_a_store_that_starts_failing_releases_those_waiting_for_room() -> None:
    class FailsWhenOpened(GatedStore):
        async def write(self, items: Sequence[WriteItem]) -> None:
            await self.gate.wait()
            raise StoreWriteError("database or disk is full")

    store = FailsWhenOpened()
    store.gate.clear()
    writer = StoreWriter(store, flush_interval=0.01, flush_max_items=2, queue_max=2, retry_backoff=5.0)
    task = asyncio.create_task(writer.run())
    try:
        for i in range(2):
            writer.offer(msg(i))
        await asyncio.sleep(0.05)
        for i in range(2, 4):
            writer.offer(msg(i))
        waiting = asyncio.ensure_future(writer.room(5.0))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        store.gate.set()  # the commit fails: the store is failing from now on
        assert not await asyncio.wait_for(waiting, 1.0)
    finally:
        with pytest.raises(WriterError):
            await writer.aclose(timeout=0.1)
        await asyncio.wait_for(task, 1.0)


async def test_a_commit_stuck_past_the_close_deadline_is_abandoned_and_counted() -> None:
    store = GatedStore()
    store.gate.clear()  # the commit never returns: SQLite waiting on a lock, say
    writer = StoreWriter(store, flush_interval=0.01)
    task = asyncio.create_task(writer.run())
    for i in range(3):
        await writer.put(msg(i))
    await asyncio.sleep(0.05)
    with pytest.raises(WriterError, match="3 unwritten"):
        await writer.aclose(timeout=0.2)
    await asyncio.wait_for(task, 1.0)
    assert await stored_ids(store) == []


async def test_a_batch_makes_way_for_a_write_and_a_failure_after_that_retries_only_the_rest(
    tmp_path: Path,
) -> None:
    # Speeches are plain inserts: a batch written twice would count every one of them twice.
    store = await SqliteStore.open(tmp_path / "greywind.sqlite3")
    inserted = [0]

    def slow_speech() -> None:
        inserted[0] += 1
        time.sleep(0.002)

    # A message whose time SQLite cannot take: the batch fails on it after it made way.
    bad = StoredMessage(G1, "bad", "u1", "Alice", 2**70, "坏的")  # type: ignore[arg-type]
    items: list[WriteItem] = [SpeechRecord(G1, float(i)) for i in range(200)]
    items += [bad, *(SpeechRecord(G1, float(i)) for i in range(200, 210))]
    try:
        await store._db.create_function("slow_speech", 0, slow_speech)
        await store._db.execute(
            "CREATE TEMP TRIGGER s AFTER INSERT ON speech_log BEGIN SELECT slow_speech(); END"
        )
        async with StoreWriter(store, flush_interval=0.01, retry_backoff=0.01) as writer:
            for item in items:
                await writer.put(item)
            while inserted[0] < 30:  # noqa: ASYNC110 - the batch is in the connection's thread
                await asyncio.sleep(0.002)
            with addressed(AddressedWork()):
                await store.upsert_user_profile(UserProfile("u1", "Alice", updated_at=1.0))
            went_in_before = inserted[0]
            await writer.flush()
            stats = writer.statistics()
        assert went_in_before < 100, "the profile waited for the whole batch"
        assert stats.written == 210
        assert stats.rejected == 1
        assert "OverflowError" in (stats.last_error or "")
        rows = await store._rows("SELECT time FROM speech_log ORDER BY rowid")
        assert [row[0] for row in rows] == [float(i) for i in range(210)]  # each once, in the order put
        assert await store.get_user_profile("u1") is not None
    finally:
        await store.close()


async def test_a_write_that_may_be_lost_leaves_the_headroom_to_one_that_cannot_wait() -> None:
    # A topic link (put_nowait, dropped when there is no room) must not take the room kept for the
    # bot's own message (offer): with it taken, a flood lost the bot's reply.
    store = MemoryStore()
    writer = StoreWriter(store, queue_max=10)  # crowded at 9: one write of headroom
    for i in range(9):
        writer.put_nowait(msg(i))
    with pytest.raises(WriterFullError):
        writer.put_nowait(msg(9))
    assert writer.offer(msg(10))
    await writer.aclose()
    assert await stored_ids(store) == [*(str(i) for i in range(9)), "10"]
    await store.close()
