"""The kernel's notion of time.

Kernel code never reads the wall clock: every component takes ``now`` (seconds since the epoch, a
float) from its caller, and the caller gets it from a :class:`Clock`. Tests and the replay tool drive a
:class:`ManualClock`; the bot passes the wall clock in from the edge (``EdgeContext.clock``).
"""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    """Anything that can tell the time in seconds since the epoch."""

    def now(self) -> float: ...


class ManualClock:
    """A clock that only moves when told to (tests, replay)."""

    __slots__ = ("_now",)

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        """Move forward by ``seconds`` (never backwards) and return the new time."""
        if seconds < 0:
            raise ValueError("a clock never moves backwards")
        self._now += seconds
        return self._now

    def set(self, when: float) -> None:
        """Jump to ``when``; a jump backwards is refused."""
        if when < self._now:
            raise ValueError(f"cannot move the clock back from {self._now} to {when}")
        self._now = float(when)
