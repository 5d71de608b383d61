"""The bot's one alarm: set for the kernel's next activation, woken early when that changes.

:meth:`Alarm.wait` sleeps until the scheduler's ``next_at()`` — or until woken: a message scheduled an
earlier activation (:meth:`poke`), a wait or reminder was parked, the clock was moved (:meth:`wake`).
The activation loop waits on it; everything that schedules (the driver, the tools, the LifeDirector's
tick, the runtime's message path) only pokes it, so none of them needs the loop itself.

The alarm sleeps wall seconds reckoned on the runtime's clock, which may run behind the wall: behind
a backlog it is how far the bot has heard (``plugins/greywind/heard.py``), and it jumps forward when
the backlog drains. So a poke wakes the alarm once the clock has passed the time it sleeps until,
and while the clock is more than :data:`CATCH_UP` behind the wall (``lag``), the alarm sleeps at most
that long: an activation that falls due in the jump is not left to the end of a sleep reckoned
before it.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from anyio.lowlevel import checkpoint

from runtime.kernel.scheduler import ActivationScheduler

__all__ = ["CATCH_UP", "MAX_SLEEP", "STALL_RETRY", "Alarm"]

# The alarm is re-checked at least this often, so a wall clock set forward is noticed.
MAX_SLEEP = 30.0
# Activations due but held back by their chat's running episode are looked at again this often (the
# episode's end wakes the loop sooner).
STALL_RETRY = 0.25
# While the clock runs more than this behind the wall, the alarm sleeps at most this long.
CATCH_UP = 0.25


class Alarm:
    def __init__(
        self,
        scheduler: ActivationScheduler,
        clock: Callable[[], float],
        *,
        lag: Callable[[], float] = lambda: 0.0,
    ) -> None:
        """``lag``: how far ``clock`` now runs behind the wall, in seconds (0: it keeps pace)."""
        self._scheduler = scheduler
        self._clock = clock
        self._lag = lag
        self._wakeup = anyio.Event()
        self._sleeping_until: float | None = None
        self.wakeups = 0

    def wake(self) -> None:
        """Re-read the schedule now (the clock moved, or something was scheduled)."""
        self._wakeup.set()

    def poke(self, *, force: bool = False) -> None:
        """Wake if the next activation is now earlier than the alarm, or the clock has passed the
        alarm (it jumped forward), or ``force``."""
        if force:
            self._wakeup.set()
            return
        next_at = self._scheduler.next_at()
        if next_at is None:
            return
        until = self._sleeping_until
        if until is None or next_at < until or until <= self._clock():
            self._wakeup.set()

    async def wait(self, *, stalled: bool = False) -> None:
        """Return when the kernel's next activation is due, or when woken.

        Always yields to the event loop. When the last batch was *stalled* — activations due but
        none ready, each held back until the chat's running episode ends (the kernel reschedules
        them at ``now + min_interval``, which may be ``now``) — it waits for that episode to end
        (its end wakes the loop) or :data:`STALL_RETRY`, instead of spinning on them.
        """
        next_at = self._scheduler.next_at()
        now = self._clock()
        longest = CATCH_UP if self._lag() > CATCH_UP else MAX_SLEEP
        if next_at is None:
            delay = longest
        elif next_at > now:
            delay = min(longest, next_at - now)
        else:
            delay = STALL_RETRY if stalled else 0.0
        if delay > 0:
            self._sleeping_until = next_at if not stalled else now + delay
            with anyio.move_on_after(delay):
                await self._wakeup.wait()
            self._sleeping_until = None
        else:
            await checkpoint()
        # A fresh event before handling what is due: a wake during the handling is not lost.
        self._wakeup = anyio.Event()
        self.wakeups += 1
