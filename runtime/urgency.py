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
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["HOLD_LIMIT", "AddressedWork", "addressed", "reaching_the_model"]

# The longest one mark holds chatter back (seconds).
HOLD_LIMIT = 2.0

_release: ContextVar[Callable[[], None] | None] = ContextVar("greywind_addressed_release", default=None)


class AddressedWork:
    """The open marks: when each began."""

    __slots__ = ("_clock", "_next", "_open")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._open: dict[int, float] = {}
        self._next = 0

    def begin(self) -> int:
        self._next += 1
        self._open[self._next] = self._clock()
        return self._next

    def end(self, token: int) -> None:
        self._open.pop(token, None)

    def pending(self) -> bool:
        """Some addressed work began less than :data:`HOLD_LIMIT` ago and has not reached the model."""
        if not self._open:
            return False
        horizon = self._clock() - HOLD_LIMIT
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
    reset = _release.set(lambda: work.end(token))
    try:
        yield
    finally:
        work.end(token)
        _release.reset(reset)


def reaching_the_model() -> None:
    """The current addressed work is calling the model: chatter need not wait for it any more."""
    release = _release.get()
    if release is not None:
        release()
