"""An @ on its way to the model takes the store's next turn, not a place behind the queue.

Real parts: the runtime with its SQLite store, the scripted model over HTTP. The slowness is SQLite's
own: a trigger that sleeps inside every profile write, as a slow disk would under the memory layer's
saves and the other chats' episodes.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from runtime.store.records import UserProfile
from runtime.urgency import AddressedWork, addressed
from tests.app.conftest import make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

QUEUED = 10
SLOW = 0.08  # seconds each queued write takes inside SQLite


async def test_an_at_reaches_the_model_before_the_writes_queued_ahead_of_it(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push({"text": "在的"})
    # (each write may wait long enough for the ten: the test is about the order, not the wait limit)
    config = make_config(openai_server, store={"write_wait_ms": 10_000})
    async with running(config, data_dir) as h:
        store = h.runtime.store
        await store._db.create_function("slow_write", 0, lambda: time.sleep(SLOW))
        await store._db.execute(
            "CREATE TEMP TRIGGER slow_profiles AFTER INSERT ON user_profiles BEGIN SELECT slow_write(); END"
        )
        committed: list[float] = []

        async def save(n: int) -> None:
            await store.upsert_user_profile(UserProfile(f"u{n}", f"member {n}", updated_at=h.clock()))
            committed.append(time.time())

        async with anyio.create_task_group() as tg:
            for n in range(QUEUED):
                tg.start_soon(save, n)
            await anyio.lowlevel.checkpoint()  # all of them waiting for the database
            await h.say("灰风 帮我看看这个", addressed=True)
            await h.settle()
        assert h.outbound.texts() == ["在的"]
        asked = next(r.at for r in openai_server.requests if r.kind == "chat")
        before = sum(1 for at in committed if at < asked)
        # In line behind them, the @'s own writes (its topic and session) would wait for all ten.
        assert before <= 3, f"{before} of the {QUEUED} writes queued before the @ went first"
        assert len(committed) == QUEUED  # and they were all written


async def test_an_addressed_read_waits_neither_for_the_read_running_nor_for_those_queued(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    async with running(make_config(openai_server), data_dir, model=False) as h:
        store = h.runtime.store
        await store._reader.create_function("slow_read", 0, lambda: time.sleep(SLOW) or 1)
        # (a search of another chat, the memory layer's long reads: all on the shared read connection)
        finished: list[str] = []

        async def other(n: int) -> None:
            await store._rows("SELECT slow_read()")
            finished.append(f"other {n}")

        async def the_at() -> None:
            with addressed(AddressedWork()):
                await store.get_message("qq:10001:group:500", "m1")
            finished.append("@")

        async with anyio.create_task_group() as tg:
            for n in range(QUEUED):
                tg.start_soon(other, n)
            await anyio.lowlevel.checkpoint()
            tg.start_soon(the_at)
        assert finished[0] == "@", finished
