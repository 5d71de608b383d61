"""One owner for everything the running bot starts: tasks, registrations and what closes them.

A :class:`Lifetime` is handed each thing as it is made — a background task (:meth:`start`), a
synchronous disposer (:meth:`add`: a registration's, a :class:`~runtime.extensions.Scope`'s), an
asynchronous one with its share of the shutdown grace (:meth:`add_async`: a final save, a flush, a
close). :meth:`aclose` undoes them newest first: what was made last, and so depends on the most, goes
first, and what everything depends on (the store, opened first) goes last. A task is cancelled at its
own place in that order, so nothing started later outlives what it uses. A step that fails or runs
out of its time is logged and the rest still run: shutdown always reaches the end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

__all__ = ["Lifetime", "LifetimeClosedError", "LifetimeStatistics"]

log = structlog.get_logger("greywind.lifetime")


class LifetimeClosedError(RuntimeError):
    """Something was handed to a lifetime that is closing or closed."""


@dataclass(frozen=True, slots=True)
class _Step:
    name: str
    close: Callable[[], Awaitable[object]] | Callable[[], object]
    deadline: float | None  # seconds; None for a synchronous step
    asynchronous: bool
    task: bool = False  # the step cancels a background task


@dataclass(frozen=True, slots=True)
class LifetimeStatistics:
    name: str
    live: int  # steps still to undo
    tasks: int  # of them, background tasks
    closed: bool
    failures: int
    cut_short: int  # async steps that ran out of their time


class Lifetime:
    """See the module docstring. ``task_group`` runs the tasks (the edge's lifespan task group)."""

    def __init__(self, name: str, task_group: TaskGroup) -> None:
        self.name = name
        self._task_group = task_group
        self._steps: list[_Step] = []
        self._closing = False
        self._closed = False
        self._failures = 0
        self._cut_short = 0

    @property
    def closing(self) -> bool:
        """From the beginning of :meth:`aclose` on."""
        return self._closing

    def _check_open(self, what: str) -> None:
        if self._closing:
            raise LifetimeClosedError(f"lifetime {self.name!r} is closing; {what} was not started")

    def add(self, dispose: Callable[[], object], *, name: str) -> None:
        """Own a synchronous disposer."""
        self._check_open(name)
        self._steps.append(_Step(name, dispose, None, asynchronous=False))

    def add_async(self, close: Callable[[], Awaitable[object]], *, name: str, deadline: float) -> None:
        """Own an asynchronous closing step, given at most ``deadline`` seconds."""
        self._check_open(name)
        self._steps.append(_Step(name, close, deadline, asynchronous=True))

    def start(self, name: str, run: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``run(*args)`` in the task group until it returns or its turn to be cancelled comes."""
        self._check_open(name)
        scope = anyio.CancelScope()

        async def task() -> None:
            with scope:
                await run(*args)

        self._task_group.start_soon(task, name=f"{self.name}/{name}")
        self._steps.append(_Step(name, scope.cancel, None, asynchronous=False, task=True))

    async def aclose(self) -> None:
        """Undo everything, newest first; idempotent."""
        if self._closing:
            return
        self._closing = True
        while self._steps:
            step = self._steps.pop()
            try:
                if step.asynchronous:
                    await self._run_async(step)
                else:
                    step.close()
            except Exception:
                self._failures += 1
                log.exception("close_step_failed", lifetime=self.name, step=step.name)
        self._closed = True

    async def _run_async(self, step: _Step) -> None:
        assert step.deadline is not None
        with anyio.move_on_after(step.deadline) as cut:
            await step.close()  # type: ignore[misc]
        if cut.cancelled_caught:
            self._cut_short += 1
            log.warning("close_step_cut_short", lifetime=self.name, step=step.name, seconds=step.deadline)

    def statistics(self) -> LifetimeStatistics:
        return LifetimeStatistics(
            name=self.name,
            live=len(self._steps),
            tasks=sum(1 for step in self._steps if step.task),
            closed=self._closed,
            failures=self._failures,
            cut_short=self._cut_short,
        )
