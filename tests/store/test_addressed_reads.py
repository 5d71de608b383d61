"""An @'s reads go back to back on their connection's thread, not one per turn of a busy event loop.

An @'s context is a dozen reads started together (the thread, the session, then the dialogue, the
tasks, the memories, the profile, the summary side by side). Each used to take its connection's lock
and hand it on once the event loop had taken its result, so reads queued for one connection went at
one or two turns of the loop each; under load a turn is milliseconds to tens of them, and that was
the tail of the @'s way to the model. Now addressed reads are put straight into their connection's
queue, whose thread runs them in order. Real SQLite file; another task makes each turn of the loop
10 ms long.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runtime.store.records import UserProfile
from runtime.store.sqlite import SqliteStore
from runtime.urgency import AddressedWork, addressed
from tests.support.sqlite_work import busy_loop

pytestmark = pytest.mark.asyncio

READS = 24
TURN = 0.01


async def test_an_ats_reads_do_not_each_wait_for_a_turn_of_a_busy_loop(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "greywind.sqlite3")
    try:
        for n in range(READS):
            await store.upsert_user_profile(UserProfile(f"u{n}", f"member {n}", updated_at=float(n)))
        async with busy_loop(TURN) as turns:
            with addressed(AddressedWork()):
                started = turns.count
                found = await asyncio.gather(*(store.get_user_profiles([f"u{n}"]) for n in range(READS)))
                took = turns.count - started
    finally:
        await store.close()
    assert [next(iter(profiles.values())).nickname for profiles in found] == [
        f"member {n}" for n in range(READS)
    ]
    assert took < READS / 3, f"{READS} reads took {took} turns of the loop"


async def test_reads_queued_at_close_are_answered_and_later_ones_refused(tmp_path: Path) -> None:
    store = await SqliteStore.open(tmp_path / "greywind.sqlite3")
    await store.upsert_user_profile(UserProfile("u1", "member 1", updated_at=1.0))
    with addressed(AddressedWork()):
        reads = [asyncio.ensure_future(store.get_user_profiles(["u1"])) for _ in range(8)]
        await asyncio.sleep(0)
        await store.close()
        answered = await asyncio.gather(*reads)
        with pytest.raises(Exception, match="closed"):
            await store.get_user_profiles(["u1"])
    assert [profiles["u1"].nickname for profiles in answered] == ["member 1"] * 8
