"""The bot's one alarm: set for the kernel's next activation, woken early when that changes.

:meth:`Alarm.wait` sleeps until the scheduler's ``next_at()`` — or until woken: a message scheduled an
earlier activation (:meth:`poke`), a wait or reminder was parked, the clock was moved (:meth:`wake`).
The activation loop waits on it; everything that schedules (the driver, the tools, the LifeDirector's
tick, the runtime's message path) only pokes it, so none of them needs the loop itself.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from anyio.lowlevel import checkpoint

from runtime.kernel.scheduler import ActivationScheduler

__all__ = ["MAX_SLEEP", "STALL_RETRY", "Alarm"]

# The alarm is re-checked at least this often, so a wall clock set forward is noticed.
MAX_SLEEP = 30.0
# Activations due but held back by their chat's running episode are looked at again this often (the
# episode's end wakes the loop sooner).
STALL_RETRY = 0.25


class Alarm:
    def __init__(self, scheduler: ActivationScheduler, clock: Callable[[], float]) -> None:
        self._scheduler = scheduler
        self._clock = clock
        self._wakeup = anyio.Event()
        self._sleeping_until: float | None = None
        self.wakeups = 0

    def wake(self) -> None:
        """Re-read the schedule now (the clock moved, or something was scheduled)."""
        self._wakeup.set()

    def poke(self, *, force: bool = False) -> None:
        """Wake if the next activation is now earlier than the alarm (or ``force``)."""
        next_at = self._scheduler.next_at()
        if force or (
            next_at is not None and (self._sleeping_until is None or next_at < self._sleeping_until)
        ):
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
        if next_at is None:
            delay = MAX_SLEEP
        elif next_at > now:
            delay = min(MAX_SLEEP, next_at - now)
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
