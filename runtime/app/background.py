"""Bookkeeping that must not hold a chat or the model's caller (a store write, a session's record):
run in the lifespan's task group, counted, waited for at stop within its share of the grace."""

from __future__ import annotations

from collections.abc import Awaitable

import anyio
import structlog
from anyio.abc import TaskGroup

__all__ = ["Background"]

log = structlog.get_logger("greywind.runtime")


class Background:
    def __init__(self, task_group: TaskGroup) -> None:
        self._task_group = task_group
        self._running = 0
        self._done = anyio.Event()
        self._done.set()

    def spawn(self, work: Awaitable[object]) -> None:
        """Run ``work``; one that fails is logged, never raised to the caller."""

        async def run() -> None:
            try:
                await work
            except Exception:
                log.exception("background_work_failed")
            finally:
                self._running -= 1
                if not self._running:
                    self._done.set()

        if not self._running:
            self._done = anyio.Event()
        self._running += 1
        self._task_group.start_soon(run)

    async def wait(self) -> None:
        """Until nothing spawned is running."""
        await self._done.wait()

    @property
    def running(self) -> int:
        return self._running
