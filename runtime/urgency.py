"""Addressed work on its way to the model, so that chatter yields the process to it.

Under a flood the event loop, the store's thread and the GIL are busy with chatter: NoneBot parses a
thousand events a second, the store writer indexes and inserts them. A forced episode's context
build is a dozen store reads and writes, each waiting its turn behind that, and an @ took seconds to
reach the model although every queue in front of it had let it pass. So the activation loop marks a
fresh chat's forced episode (no episode there lately: not @-spam) as *addressed work* from when it
has its slot until its first model call (:func:`addressed`, :func:`reaching_the_model`), and the
frame guard hands chatter to NoneBot only slowly while any mark is open
(:meth:`AddressedWork.pending`). A mark counts for :data:`HOLD_LIMIT` seconds at most, so a slow
build cannot stall chatter for long.

The store serves the marked work first too (:func:`in_addressed_work`): its reads and writes wait for
the statement the database is running, not for everything the writer, the memory layer and the
other chats' episodes have queued in front of it. Writes the work leaves behind it on a task of their
own (its context's rows, written beside the model call) keep that place (:func:`left_behind`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = [
    "HOLD_LIMIT",
    "AddressedWork",
    "addressed",
    "before_the_model",
    "in_addressed_work",
    "left_behind",
    "reaching_the_model",
]

# The longest one mark holds chatter back (seconds).
HOLD_LIMIT = 2.0


class _Mark:
    """The current task's mark: open until the model is called (or the block ends)."""

    __slots__ = ("began", "clock", "end", "open")

    def __init__(self, end: Callable[[], None], clock: Callable[[], float]) -> None:
        self.end = end
        self.clock = clock
        self.began = clock()
        self.open = True

    def close(self) -> None:
        self.open = False
        self.end()

    def holds(self) -> bool:
        return self.open and self.clock() - self.began < HOLD_LIMIT


_mark: ContextVar[_Mark | None] = ContextVar("greywind_addressed_mark", default=None)
_reached: ContextVar[Callable[[], None] | None] = ContextVar("greywind_model_reached", default=None)


class AddressedWork:
    """The open marks: when each began."""

    __slots__ = ("_next", "_open", "clock")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._open: dict[int, float] = {}
        self._next = 0

    def begin(self) -> int:
        self._next += 1
        self._open[self._next] = self.clock()
        return self._next

    def end(self, token: int) -> None:
        self._open.pop(token, None)

    def pending(self) -> bool:
        """Some addressed work began less than :data:`HOLD_LIMIT` ago and has not reached the model."""
        if not self._open:
            return False
        horizon = self.clock() - HOLD_LIMIT
        for token, began in list(self._open.items()):
            if began >= horizon:
                return True
            del self._open[token]  # too old to hold anything back
        return False

    def __len__(self) -> int:
        return len(self._open)


@contextlib.contextmanager
def addressed(work: AddressedWork | None) -> Iterator[None]:
    """Mark the code inside (a forced episode) as addressed work until it reaches the model."""
    if work is None:
        yield
        return
    token = work.begin()
    mark = _Mark(lambda: work.end(token), work.clock)
    reset = _mark.set(mark)
    try:
        yield
    finally:
        mark.close()
        _mark.reset(reset)


def reaching_the_model() -> None:
    """The current addressed work is calling the model: chatter need not wait for it any more."""
    mark = _mark.get()
    if mark is not None:
        mark.close()
    reached = _reached.get()
    if reached is not None:
        reached()


@contextlib.contextmanager
def before_the_model(reached: Callable[[], None]) -> Iterator[None]:
    """Inside, :func:`reaching_the_model` calls ``reached`` (any episode, addressed or not)."""
    token = _reached.set(reached)
    try:
        yield
    finally:
        _reached.reset(token)


def in_addressed_work() -> bool:
    """The current task is addressed work that has not reached the model (for :data:`HOLD_LIMIT`
    seconds at most); tasks it spawned meanwhile count as it does."""
    mark = _mark.get()
    return mark is not None and mark.holds()


def left_behind() -> contextlib.AbstractContextManager[None]:
    """Taken by addressed work for what it leaves running behind it (its context's writes, on a task
    of their own), and entered there: the store goes on serving that first once the work has reached
    the model, for what is left of :data:`HOLD_LIMIT`. Chatter does not wait for it (the frame
    guard's marks are the work's own and end as they did)."""
    mark = _mark.get()
    if mark is None or not mark.holds():
        return contextlib.nullcontext()
    kept = _Mark(lambda: None, mark.clock)
    kept.began = mark.began
    return _marked(kept)


@contextlib.contextmanager
def _marked(mark: _Mark) -> Iterator[None]:
    token = _mark.set(mark)
    try:
        yield
    finally:
        _mark.reset(token)
