"""Writes queued together on a busy event loop do not each wait for a turn of it.

A write takes the write connection's lock, has its transaction run on the connection's thread and
gives the lock to the next one once the event loop has taken the result. Under a flood a turn of the
loop is tens of milliseconds, so writes waiting for one another (an @'s topic and session, the other
chats' episodes, the memory layer's saves, the writer's batches) went at one or two turns each, and
the thirtieth waited a second, whatever SQLite needed. Now a write holds the lock only while it
queues its transaction on the thread, in the same order, and the thread runs them back to back.
Real SQLite file; another task makes each turn of the loop 10 ms long.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runtime.store.records import UserProfile
from runtime.store.sqlite import SqliteStore
from tests.support.sqlite_work import busy_loop

pytestmark = pytest.mark.asyncio

WRITES = 60
TURN = 0.01


async def test_writes_queued_together_do_not_each_wait_for_a_turn_of_a_busy_loop(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "greywind.sqlite3")
    done: list[int] = []
    try:
        async with busy_loop(TURN) as turns:

            async def save(n: int) -> None:
                await store.upsert_user_profile(UserProfile(f"u{n}", f"member {n}", updated_at=float(n)))
                done.append(n)

            started = turns.count
            await asyncio.gather(*(save(n) for n in range(WRITES)))
            took = turns.count - started
    finally:
        await store.close()
    assert took < WRITES / 3, f"{WRITES} writes took {took} turns of the loop"
    assert sorted(done) == list(range(WRITES))
    again = await SqliteStore.open(tmp_path / "greywind.sqlite3")
    try:
        assert len(await again.get_user_profiles([f"u{n}" for n in range(WRITES)])) == WRITES
    finally:
        await again.close()
