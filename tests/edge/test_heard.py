"""The runtime's clock: how far the bot has heard while frames wait at the edge."""

from __future__ import annotations

import pytest

from plugins.greywind.heard import HEARD_LAG_MAX, RECHECK, HeardClock


class Scene:
    """A wall clock, a monotonic clock and the oldest waiting frame's arrival, all set by the test."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.tick = 0.0
        self.waiting: float | None = None

    def clock(self) -> HeardClock:
        return HeardClock(lambda: self.now, lambda: self.waiting, monotonic=lambda: self.tick)

    def later(self, seconds: float) -> None:
        self.now += seconds
        self.tick += seconds


def test_with_nothing_waiting_it_is_the_clock() -> None:
    scene = Scene()
    heard = scene.clock()
    assert heard() == 1_000.0
    scene.later(5.0)
    assert heard() == 1_005.0


def test_while_frames_wait_it_is_the_oldest_ones_arrival() -> None:
    scene = Scene()
    heard = scene.clock()
    scene.waiting = 990.0  # the bot was busy: a frame read 10 s ago still waits
    assert heard() == 990.0
    scene.later(3.0)
    scene.waiting = 995.0  # the backlog moved on
    assert heard() == 995.0
    scene.waiting = None
    scene.later(1.0)
    assert heard() == scene.now, "drained: the clock again"


def test_its_lag_is_how_far_behind_the_clock_it_is() -> None:
    scene = Scene()
    heard = scene.clock()
    scene.waiting = 990.0
    assert heard.lag() == 10.0
    scene.later(RECHECK)
    assert heard.lag() == pytest.approx(10.0 + RECHECK)
    scene.waiting = None
    scene.later(RECHECK)
    assert heard.lag() == 0.0, "drained: it keeps the clock's pace again"


def test_a_backlog_that_never_drains_holds_it_back_at_most_a_minute() -> None:
    scene = Scene()
    heard = scene.clock()
    scene.waiting = 100.0
    assert heard() == 1_000.0 - HEARD_LAG_MAX
    scene.later(30.0)
    assert heard() == 1_030.0 - HEARD_LAG_MAX


def test_it_never_goes_backwards() -> None:
    scene = Scene()
    heard = scene.clock()
    assert heard() == 1_000.0
    scene.later(1.0)
    scene.waiting = 1_000.5  # a frame that came in just before and is still waiting
    assert heard() == 1_000.0 + 0.5, "held back to the waiting frame, not below what it said before"
    scene.waiting = 999.0  # a frame older than what was already said (it was in flight)
    scene.later(1.0)
    assert heard() == 1_000.5


def test_the_waiting_frames_are_looked_at_once_per_recheck() -> None:
    scene = Scene()
    looks = []

    def oldest() -> float | None:
        looks.append(scene.tick)
        return scene.waiting

    heard = HeardClock(lambda: scene.now, oldest, monotonic=lambda: scene.tick)
    for _ in range(100):
        heard()
    assert len(looks) == 1
    scene.later(2 * RECHECK)
    heard()
    assert len(looks) == 2
