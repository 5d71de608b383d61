"""A chat's topic threads are found through ``thread_chats``, not by reading every thread's chat list.

The resolver lists a chat's live threads on the way to every addressed reply. Read through each
thread's ``chat_ids_json``, that listing grew with every thread ever made in any chat: 15 ms at
10,000 threads and 50-70 ms at 50,000 on this machine, for a quiet chat with none of them. The
SQLite work of one listing is counted here in virtual-machine steps (a progress handler), so the
test says whether it grows with the other chats' threads, whatever the machine's speed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from runtime.store.records import TopicThread, TopicThreadStatus
from runtime.store.sql.context import topic_threads_sql
from runtime.store.sqlite import DB_FILENAME, SqliteStore
from runtime.store.sqlite.schema import LATEST_VERSION
from tests.support.sqlite_work import database_before, vm_steps

pytestmark = pytest.mark.asyncio

QUIET, BUSY = "group:quiet", "group:busy"
LIVE = (TopicThreadStatus.ACTIVE, TopicThreadStatus.DORMANT)


def _thread(n: int, chat: str, at: float) -> TopicThread:
    return TopicThread(f"topic-{chat}-{n}", f"话题 {n}", "task", "", at, at, chat_ids=(chat,))


async def _add_threads(store: SqliteStore, chat: str, count: int, start: float) -> None:
    for n in range(count):
        await store.upsert_topic_thread(_thread(n, chat, start + n))


def _listing_steps(path: Path, chat_id: str, limit: int | None) -> int:
    """Virtual-machine steps (in hundreds) SQLite takes for the store's listing of ``chat_id``."""
    sql, params = topic_threads_sql(
        statuses=LIVE, chat_id=chat_id, limit=limit, join=SqliteStore.threads_join
    )
    return vm_steps(path, sql, params)[0]


async def test_a_chats_listing_does_not_grow_with_other_chats_threads(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    store = await SqliteStore.open(path)
    try:
        await _add_threads(store, QUIET, 3, 0.0)
        await _add_threads(store, BUSY, 1_500, 100.0)
        before = {limit: _listing_steps(path, QUIET, limit) for limit in (None, 8)}
        await _add_threads(store, "group:other", 1_500, 5_000.0)
        after = {limit: _listing_steps(path, QUIET, limit) for limit in (None, 8)}
        listed = await store.list_topic_threads(statuses=LIVE, chat_id=QUIET, limit=8)
    finally:
        await store.close()

    assert [t.id for t in listed] == [f"topic-{QUIET}-{n}" for n in (2, 1, 0)]
    for limit in (None, 8):
        # Reading every thread's chat list: twice the threads, twice the steps (3,000 steps and more).
        assert after[limit] <= before[limit] + 2, (limit, before, after)
        assert after[limit] < 50, (limit, after)


async def test_a_database_from_before_finds_its_threads_by_chat(tmp_path: Path) -> None:
    """Threads written before ``thread_chats`` existed are filled in by the migration; a chat list that
    is not JSON does not stop it."""
    path = tmp_path / DB_FILENAME
    with sqlite3.connect(path) as conn:
        older = database_before(conn, lambda migration: "thread_chats" in migration.name)
        lists = (f'["{QUIET}"]', f'["{QUIET}", "{BUSY}"]', f'["{BUSY}"]', "not json")  # the last names none
        for n, chats in enumerate(lists):
            conn.execute(
                "INSERT INTO threads (id, title, type, summary, vision_json, tags_json, chat_ids_json,"
                " status, created_at, updated_at, extra_json) VALUES (?, 't', 'task', '', '{}', '[]', ?,"
                " 'active', ?, ?, '{}')",
                (f"old-{n}", chats, float(n), float(n)),
            )
    conn.close()

    store = await SqliteStore.open(path)
    try:
        assert store.schema_version == LATEST_VERSION > len(older)
        assert [t.id for t in await store.list_topic_threads(chat_id=QUIET)] == ["old-1", "old-0"]
        assert [t.id for t in await store.list_topic_threads(chat_id=BUSY)] == ["old-2", "old-1"]
        assert await store.list_topic_threads(chat_id="not json") == []
    finally:
        await store.close()
