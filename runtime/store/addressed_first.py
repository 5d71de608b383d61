"""A lock that lets addressed work through first: the store's turn for the @ on its way to the model.

The store runs one statement at a time per connection, and its callers queue for the connection: the
writer's batches, the memory layer's saves, every chat's episodes and their context reads. An @'s
context build is a dozen store calls; behind a queue of other work each of them waited for all of
it, and an answer that needs 20 ms of database took hundreds under load. :class:`AddressedFirstLock`
is an asyncio lock whose waiters inside addressed work (:func:`runtime.urgency.in_addressed_work`: a
fresh chat's forced episode until it calls the model) are handed the lock before any other waiter;
each line in arrival order. A running statement is never interrupted, and the others wait only
while addressed work is queued, which the mark bounds (:data:`runtime.urgency.HOLD_LIMIT`).

The store's single-trip transactions hold the write lock only while they queue on the connection's
thread; a long one there (the writer's batch of hundreds of messages under a flood) asks
:meth:`AddressedFirstLock.wanted` (and the thread's queue) between its statements and commits early
when anyone waits: the @ waits for a few rows, not for the whole batch.
"""

from __future__ import annotations

import asyncio
from collections import deque

from runtime.urgency import in_addressed_work

__all__ = ["AddressedFirstLock"]


class AddressedFirstLock:
    """``asyncio.Lock``'s interface (``async with``, ``acquire``, ``release``, ``locked``)."""

    __slots__ = ("_held", "_others", "_urgent")

    def __init__(self) -> None:
        self._held = False
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._others: deque[asyncio.Future[None]] = deque()

    def locked(self) -> bool:
        return self._held

    def wanted(self) -> bool:
        """Someone waits for the lock. Safe to ask from another thread (two length reads; a waiter
        leaves its line when it is granted the lock or gives up)."""
        return len(self._urgent) > 0 or len(self._others) > 0

    async def acquire(self) -> bool:
        if not self._held:
            self._held = True
            return True
        line = self._urgent if in_addressed_work() else self._others
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        line.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed the lock as it was cancelled: on to the next
            else:
                line.remove(waiter)
            raise
        return True

    def release(self) -> None:
        """Hand the lock to the next waiter (addressed work first), or free it."""
        if not self._held:
            raise RuntimeError("release of an unlocked AddressedFirstLock")
        for line in (self._urgent, self._others):
            while line:
                waiter = line.popleft()
                if not waiter.done():
                    waiter.set_result(None)  # it holds the lock now
                    return
        self._held = False

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()
