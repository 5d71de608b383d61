"""The Lifetime: what the running bot started is undone newest first, each async step within its time."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from runtime.lifetime import Lifetime, LifetimeClosedError

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_everything_is_undone_newest_first_and_a_task_stops_at_its_place() -> None:
    done: list[str] = []

    async def serve() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            done.append("task")

    async def close_store() -> None:
        await anyio.lowlevel.checkpoint()
        done.append("store")

    async def final_save() -> None:
        # The task registered after this step is already cancelled; the one before is still running.
        await anyio.lowlevel.checkpoint()
        done.append("save")

    async with anyio.create_task_group() as tg:
        life = Lifetime("bot", tg)
        life.add_async(close_store, name="store", deadline=1.0)
        life.start("service", serve)
        life.add_async(final_save, name="save", deadline=1.0)
        life.add(lambda: done.append("registration"), name="tool")
        await anyio.lowlevel.checkpoint()
        assert life.statistics().tasks == 1
        await life.aclose()
    assert done == ["registration", "save", "task", "store"]
    assert life.statistics().live == 0


async def test_a_step_out_of_time_or_failing_does_not_keep_the_rest_from_closing() -> None:
    done: list[str] = []

    async def hangs() -> None:
        await anyio.sleep_forever()

    def breaks() -> None:
        raise RuntimeError("broken disposer")

    async with anyio.create_task_group() as tg:
        life = Lifetime("bot", tg)
        life.add(lambda: done.append("store"), name="store")
        life.add_async(hangs, name="flush", deadline=0.05)
        life.add(breaks, name="broken")
        with anyio.fail_after(2):
            await life.aclose()
        await life.aclose()  # idempotent
    assert done == ["store"]
    stats = life.statistics()
    assert (stats.cut_short, stats.failures, stats.closed) == (1, 1, True)


async def test_nothing_can_be_started_once_closing() -> None:
    async with anyio.create_task_group() as tg:
        life = Lifetime("bot", tg)
        await life.aclose()
        with pytest.raises(LifetimeClosedError):
            life.start("late", anyio.sleep_forever)
        with pytest.raises(LifetimeClosedError):
            life.add(lambda: None, name="late")
