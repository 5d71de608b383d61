"""The runtime's clock: how far the bot has heard.

The edge dates a message when its frame was read off the socket (:mod:`plugins.greywind.onebot_guard`),
so a backlog worked off late keeps the pace it was said at. The runtime must then live on the same
time line: while messages still wait at the edge (as frames the guard holds, or queued for their
chat's turn), its present is the arrival of the oldest of them, not the clock. Otherwise everything
it times from a message (an activation's delay, a deadline) would have run out before the messages
said after it, which may supersede it, are heard; and the bot's own speeches, stamped by the clock,
would lie in the future of the messages heard after them.

:class:`HeardClock` is that present: the clock when nothing waits, else the oldest waiting message's
arrival, at most :data:`HEARD_LAG_MAX` behind the clock (a backlog that never drains, chatter held
behind a flood of @s, does not stop the runtime's time), and never going backwards. It looks at the
waiting messages at most every :data:`RECHECK` seconds: the runtime reads its clock several times a
message. :meth:`HeardClock.lag` says how far behind the clock it is (the runtime's alarm re-reads it
often meanwhile: it jumps forward when the backlog drains).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["HEARD_LAG_MAX", "RECHECK", "HeardClock"]

HEARD_LAG_MAX = 60.0
RECHECK = 0.05


class HeardClock:
    """``clock`` held back to ``oldest_waiting()`` (when the oldest waiting message arrived, or None)."""

    __slots__ = ("_checked", "_clock", "_lag", "_last", "_monotonic", "_oldest_waiting", "_waiting")

    def __init__(
        self,
        clock: Callable[[], float],
        oldest_waiting: Callable[[], float | None],
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._oldest_waiting = oldest_waiting
        self._monotonic = monotonic
        self._checked = float("-inf")
        self._waiting: float | None = None
        self._last = float("-inf")
        self._lag = 0.0

    def __call__(self) -> float:
        now = self._clock()
        tick = self._monotonic()
        if tick - self._checked >= RECHECK:
            self._checked = tick
            self._waiting = self._oldest_waiting()
        waiting = self._waiting
        heard = now
        if waiting is not None and waiting < now:
            heard = waiting if waiting > now - HEARD_LAG_MAX else now - HEARD_LAG_MAX
        if heard < self._last:
            heard = self._last
        self._last = heard
        self._lag = now - heard
        return heard

    def lag(self) -> float:
        """How far behind the clock this clock is now, in seconds (0 when nothing waits)."""
        self()
        return self._lag
