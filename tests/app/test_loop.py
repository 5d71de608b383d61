"""The activation loop on the real clock: one alarm at the next activation, no polling."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from tests.app.conftest import FakeClock, make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

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
            while not h.outbound.sent:  # noqa: ASYNC110 - the fake edge is a plain list
                await anyio.sleep(0.05)
        assert time.time() - now >= 0.4  # never before its time
        assert h.outbound.texts() == ["提醒：到点了"]
        assert rt.loop.statistics().wakeups - idle_wakeups <= 4


async def test_activations_held_back_by_a_running_episode_do_not_spin_the_loop(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": {"delay": 0.3, "text": "嗯，我觉得可以"}})
    config = make_config(
        openai_server,
        budget={"min_interval_ms": 0},
        scheduling={"high_delay_ms": 100, "medium_delay_ms": 100, "supersede": "none"},
    )
    async with running(config, data_dir, clock=WallClock()) as h:
        rt = h.runtime
        for n in range(5):
            await h.say(f"这事灰风怎么看？我是第{n}个问的", sender=str(700 + n))
        before = rt.loop.statistics().wakeups
        with anyio.fail_after(10):
            while len(h.outbound.sent) < 2:  # noqa: ASYNC110 - the fake edge is a plain list
                await anyio.sleep(0.05)
        # The others waited for the running episode instead of being re-examined in a tight loop.
        assert rt.loop.statistics().wakeups - before < 60
        assert "灰风在线" in await rt.control.status(None)
