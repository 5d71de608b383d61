"""What only the SQLite backend has to get right: the file, its schema, corruption, locks, the data dir."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from runtime.config.store import StoreConfig
from runtime.store.errors import (
    DataDirError,
    SchemaTooNewError,
    StoreCorruptError,
    StoreLockedError,
)
from runtime.store.paths import data_dir_from_env
from runtime.store.records import (
    EventRecord,
    Session,
    SessionState,
    SpeechRecord,
    StoredMessage,
    TopicThread,
)
from runtime.store.sqlite import DB_FILENAME, LATEST_VERSION, SqliteStore
from runtime.store.sqlite.schema import load_migrations
from runtime.store.writer import StoreWriter
from tests.support.sqlite_work import database_before

pytestmark = pytest.mark.asyncio

G1 = "group:1"
FAST_LOCKS = StoreConfig(busy_timeout_ms=50, lock_retries=2, lock_backoff_ms=10)


def msg(i: int, text: str = "你好") -> StoredMessage:
    return StoredMessage(G1, str(i), "u1", "Alice", float(i), text)


async def test_opens_in_wal_mode_with_the_latest_schema(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / DB_FILENAME)
    try:
        assert store.schema_version == LATEST_VERSION >= 2
        assert (await store._one("PRAGMA journal_mode"))[0] == "wal"
        assert (await store._one("PRAGMA synchronous"))[0] == 1  # NORMAL
    finally:
        await store.close()


async def test_data_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    store = await SqliteStore.open(path)
    await store.append_messages([msg(1, "重启以后还在")])
    await store.close()
    store = await SqliteStore.open(path)
    try:
        assert (await store.get_message(G1, "1")).text == "重启以后还在"  # type: ignore[union-attr]
        assert len(await store.search_messages("重启", chat_ids=[G1])) == 1
    finally:
        await store.close()


async def test_missing_data_dir_is_created_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "deep" / "data"
    monkeypatch.setenv("GREYWIND_DATA_DIR", str(target))
    assert data_dir_from_env() == target
    store = await SqliteStore.open()
    await store.close()
    assert (target / DB_FILENAME).is_file()


async def test_data_dir_defaults_to_dot_data() -> None:
    assert data_dir_from_env({}) == Path("./data")
    assert data_dir_from_env({"GREYWIND_DATA_DIR": ""}) == Path("./data")


async def test_unusable_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(DataDirError, match="GREYWIND_DATA_DIR"):
        await SqliteStore.open(blocker / "data" / DB_FILENAME)


async def test_a_file_that_is_not_a_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    garbage = b"this is not sqlite at all" * 100
    path.write_bytes(garbage)
    with pytest.raises(StoreCorruptError, match="not an SQLite database"):
        await SqliteStore.open(path)
    assert path.read_bytes() == garbage


async def test_damaged_pages_are_refused_at_start(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    store = await SqliteStore.open(path)
    await store.append_messages(
        [msg(i, f"第{i}条消息，内容足够长以便占满几页数据库" * 5) for i in range(300)]
    )
    await store.close()
    raw = bytearray(path.read_bytes())
    page = 4096
    assert len(raw) > 12 * page
    for offset in range(2 * page, len(raw), page):
        raw[offset : offset + 200] = b"\xa5" * 200  # smash every page header after the first two
    path.write_bytes(bytes(raw))
    with pytest.raises(StoreCorruptError):
        await SqliteStore.open(path)


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    store = await SqliteStore.open(path)
    await store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO schema_version VALUES (99, '0099_future.sql', 0)")
    conn.close()
    with pytest.raises(SchemaTooNewError, match="schema version 99"):
        await SqliteStore.open(path)


async def test_migrates_a_version_1_database_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    first = load_migrations()[0]
    with sqlite3.connect(path) as conn:
        conn.executescript(first.sql)
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at REAL NOT NULL)"
        )
        conn.execute("INSERT INTO schema_version VALUES (1, ?, 0)", (first.name,))
        conn.execute(
            "INSERT INTO messages (chat_id, message_id, sender_id, sender_name, time, text, words, chars)"
            " VALUES (?, '1', 'u1', 'Alice', 1.0, '老数据 爬虫', '老 数据 爬虫', '老 数 据 爬 虫')",
            (G1,),
        )
        conn.execute("INSERT INTO speech_log (chat_id, time, forced) VALUES (?, 5.0, 0)", (G1,))
    conn.close()
    store = await SqliteStore.open(path)
    try:
        assert store.schema_version == LATEST_VERSION
        assert (await store.get_message(G1, "1")).text == "老数据 爬虫"  # type: ignore[union-attr]
        assert len(await store.search_messages("爬虫", chat_ids=[G1])) == 1
        assert len(await store.recent_speeches(G1, since=0.0)) == 1
        usage = await store.add_token_usage(G1, "2026-03-11", prompt_tokens=1, completion_tokens=2)
        assert usage.calls == 1  # a table from migration 2 works
    finally:
        await store.close()


async def test_a_version_3_database_keeps_its_messages_and_takes_a_reused_id(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    with sqlite3.connect(path) as conn:
        database_before(conn, lambda migration: migration.version > 3)
        conn.execute(
            "INSERT INTO messages (chat_id, message_id, sender_id, sender_name, time, text, words, chars)"
            " VALUES (?, '5', 'u1', 'Alice', 1.0, '旧的爬虫', '旧 的 爬虫', '旧 的 爬 虫')",
            (G1,),
        )
    conn.close()
    store = await SqliteStore.open(path)
    try:
        assert store.schema_version == LATEST_VERSION >= 4
        await store.write([msg(5, "新的爬虫")])  # the platform reused id 5
        assert [m.text for m in await store.recent_messages(G1)] == ["旧的爬虫", "新的爬虫"]
        assert len(await store.search_messages("爬虫", chat_ids=[G1])) == 2
        assert (await store.get_message(G1, "5")).text == "新的爬虫"  # type: ignore[union-attr]
    finally:
        await store.close()


def _hold_lock(path: Path, release: threading.Event, held: threading.Event, whole_file: bool) -> None:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    if whole_file:
        # Nobody else may even read: what a backup tool or a second GreyWind would do.
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("INSERT INTO speech_log (chat_id, time, forced) VALUES ('group:9', 1.0, 0)")
    held.set()
    release.wait(10)
    conn.execute("ROLLBACK")
    conn.close()


async def _locked(path: Path, *, whole_file: bool) -> tuple[threading.Thread, threading.Event]:
    release, held = threading.Event(), threading.Event()
    thread = threading.Thread(target=_hold_lock, args=(path, release, held, whole_file), daemon=True)
    thread.start()
    assert await asyncio.to_thread(held.wait, 5)
    return thread, release


async def test_a_database_locked_past_every_retry_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    await (await SqliteStore.open(path)).close()
    thread, release = await _locked(path, whole_file=True)
    try:
        with pytest.raises(StoreLockedError, match="locked by another connection through 3 attempt"):
            await SqliteStore.open(path, config=FAST_LOCKS)
    finally:
        release.set()
        await asyncio.to_thread(thread.join, 5)


async def test_writes_wait_out_a_lock_and_the_writer_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    store = await SqliteStore.open(path, config=FAST_LOCKS)
    try:
        thread, release = await _locked(path, whole_file=False)
        with pytest.raises(StoreLockedError):
            await store.write([SpeechRecord(G1, 1.0)])
        async with StoreWriter(store, flush_interval=0.01, retry_backoff=0.02) as writer:
            for i in range(20):
                await writer.put(msg(i))
            await asyncio.sleep(0.3)
            assert writer.statistics().written == 0
            assert writer.statistics().failures >= 1
            release.set()
            await asyncio.to_thread(thread.join, 5)
            await writer.flush()
        assert await store.count_messages(G1) == 20
        assert await store.recent_speeches("group:9", since=0.0) == []  # the other side rolled back
    finally:
        await store.close()


async def test_a_close_cut_short_behind_a_locked_write_leaves_no_thread_keeping_the_process_alive(
    tmp_path: Path,
) -> None:
    path = tmp_path / DB_FILENAME
    before = set(threading.enumerate())
    store = await SqliteStore.open(path, config=StoreConfig(busy_timeout_ms=500, lock_retries=1))
    workers = [t for t in threading.enumerate() if t not in before and "connection_worker" in t.name]
    assert workers, "the store's connections run in threads of their own"
    thread, release = await _locked(path, whole_file=False)
    try:
        writing = asyncio.ensure_future(store.write([SpeechRecord(G1, 1.0)]))
        await asyncio.sleep(0.05)  # the write is waiting on the lock, holding the store's write lock
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):  # the shutdown's share for closing the store
                await store.close()
        # The threads end once the statement they run returns, without anyone awaiting them.
        for worker in workers:
            await asyncio.to_thread(worker.join, 5)
            assert not worker.is_alive(), "a connection thread outlived its cut-short close"
        with pytest.raises(Exception):  # noqa: B017 - the write died with the store, whatever it says
            await writing
    finally:
        release.set()
        await asyncio.to_thread(thread.join, 5)


async def test_concurrent_reads_and_writes_share_one_connection_safely(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / DB_FILENAME)
    try:
        async with StoreWriter(store, flush_interval=0.005) as writer:

            async def produce(k: int) -> None:
                for i in range(25):
                    await writer.put(msg(k * 100 + i, f"并发{k}"))
                    await asyncio.sleep(0)

            async def sessions(k: int) -> None:
                for i in range(10):
                    await store.upsert_session(
                        Session(
                            f"s{k}", "tt", G1, SessionState.ACTIVE, 1.0, float(i), recent_dialogue=(str(i),)
                        )
                    )
                    await store.upsert_topic_thread(TopicThread(f"tt{k}", "t", "chat", "", 1.0, float(i)))

            async def read(k: int) -> None:
                for _ in range(10):
                    await store.search_messages(f"并发{k}", chat_ids=[G1])
                    await store.recent_messages(G1, limit=5)

            await asyncio.gather(*(f(k) for k in range(8) for f in (produce, sessions, read)))
            await writer.flush()
            assert writer.statistics().failures == 0
        assert await store.count_messages(G1) == 200
        assert len(await store.list_sessions()) == 8
        assert {s.recent_dialogue for s in await store.list_sessions()} == {("9",)}
        assert len(await store.search_messages("并发3", chat_ids=[G1], limit=100)) == 25
    finally:
        await store.close()


async def test_a_lone_surrogate_in_json_is_stored_as_a_replacement_character(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / DB_FILENAME)
    try:
        record = EventRecord(
            "ev-odd",
            "reminder",
            G1,
            None,
            (),
            (),
            1.0,
            1.0,
            2.0,
            None,
            0.5,
            "scheduled",
            {"text": "提醒\ud83d"},
        )
        await store.save_event(record)
        stored = await store.get_event("ev-odd")
        assert stored is not None
        assert stored.payload == {"text": "提醒\ufffd"}
    finally:
        await store.close()
