"""The activation loop on the real clock: one alarm at the next activation, no polling."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from tests.app.conftest import FakeClock, make_config, running

pytestmark = pytest.mark.asyncio


class WallClock(FakeClock):
    def __call__(self) -> float:
        return time.time()


async def test_the_loop_wakes_for_a_new_activation_and_otherwise_sleeps(data_dir: Path) -> None:
    async with running(make_config(None), data_dir, clock=WallClock(), model=False) as h:
        rt = h.runtime
        await anyio.sleep(0.3)
        idle_wakeups = rt.loop.statistics().wakeups
        assert idle_wakeups <= 2  # nothing scheduled: the loop sleeps, it does not poll
        now = time.time()
        rt.kernel.schedule_activation(
            "reminder",
            "group:500",
            now=now,
            not_before=now + 0.4,
            deadline=now + 60,
            payload={"text": "到点了", "forced": True},
        )
        rt.loop.poke()
        with anyio.fail_after(5):
            while not h.bot.calls:  # noqa: ASYNC110 - the fake bot is a plain list
                await anyio.sleep(0.05)
        assert time.time() - now >= 0.4  # never before its time
        assert h.bot.texts() == ["提醒：到点了"]
        assert rt.loop.statistics().wakeups - idle_wakeups <= 4
