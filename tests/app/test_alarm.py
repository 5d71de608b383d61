"""The activation loop's alarm on a runtime clock that runs behind the wall: behind a backlog the
runtime's clock is how far the bot has heard, and it jumps forward when the backlog drains."""

from __future__ import annotations

from types import SimpleNamespace

import anyio
import pytest

from runtime.app.alarm import CATCH_UP, Alarm

pytestmark = pytest.mark.anyio


class Schedule:
    """The scheduler as the alarm sees it: the next activation's time."""

    def __init__(self, at: float | None) -> None:
        self.at = at

    def next_at(self) -> float | None:
        return self.at


def alarm_on(schedule: Schedule, clock: SimpleNamespace) -> Alarm:
    """An alarm on ``clock.now``, which runs ``clock.lag`` seconds behind the wall."""
    return Alarm(schedule, lambda: clock.now, lag=lambda: clock.lag)  # type: ignore[arg-type]


async def returns_within(alarm: Alarm, seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        await alarm.wait()
        return True
    return False


async def test_a_poke_wakes_the_alarm_once_the_clock_has_passed_its_activation() -> None:
    clock = SimpleNamespace(now=1_000.0, lag=0.0)
    schedule = Schedule(1_005.0)
    alarm = alarm_on(schedule, clock)
    woke = anyio.Event()

    async def sleeper() -> None:
        await alarm.wait()  # five seconds of wall time, reckoned at 1000
        woke.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper)
        await anyio.sleep(0.05)
        clock.now = 1_012.0  # the backlog drained: the runtime heard twelve seconds at once
        alarm.poke()  # the message that moved it; the schedule is unchanged
        with anyio.fail_after(1.0):
            await woke.wait()


async def test_a_poke_before_the_activation_leaves_the_alarm_asleep() -> None:
    clock = SimpleNamespace(now=1_000.0, lag=0.0)
    alarm = alarm_on(Schedule(1_005.0), clock)
    async with anyio.create_task_group() as tg:
        tg.start_soon(alarm.wait)
        await anyio.sleep(0.05)
        clock.now = 1_003.0
        alarm.poke()
        await anyio.sleep(0.2)
        assert alarm.wakeups == 0
        tg.cancel_scope.cancel()


async def test_while_the_clock_runs_behind_the_wall_the_alarm_sleeps_briefly() -> None:
    clock = SimpleNamespace(now=1_000.0, lag=15.0)  # a backlog: fifteen seconds not yet heard
    schedule = Schedule(1_005.0)
    alarm = alarm_on(schedule, clock)
    woke = anyio.Event()

    async def sleeper() -> None:
        await alarm.wait()
        woke.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper)
        await anyio.sleep(0.05)
        clock.now, clock.lag = 1_015.0, 0.0  # the backlog drained; no message pokes the alarm
        with anyio.fail_after(CATCH_UP + 0.5):
            await woke.wait()


async def test_on_a_clock_that_keeps_the_walls_pace_the_alarm_sleeps_until_the_activation() -> None:
    clock = SimpleNamespace(now=1_000.0, lag=0.0)
    alarm = alarm_on(Schedule(1_001.5), clock)
    assert not await returns_within(alarm, CATCH_UP + 0.5)
    clock.now = 1_001.5
    assert await returns_within(alarm, 0.2)
