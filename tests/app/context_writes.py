"""The context's writes of an @ (its topic thread, its session, the user's turn) seen from a test.

:func:`wrap_context_writes` puts a wrapper around the store's topic-thread and session writes, to
hold them back or to see when each began and ended; :func:`until` polls for what a test waits on
from outside the event loop (the model server's thread, the store's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

Write = Callable[[Any], Awaitable[None]]

# The store's methods behind an @'s deferred writes, and the part each belongs to.
CONTEXT_WRITES = {"upsert_topic_thread": "thread", "upsert_session": "session"}


def wrap_context_writes(store: Any, wrap: Callable[[str, Write], Write]) -> None:
    """Replace each of the store's context writes by ``wrap(part, the write)``."""
    for method, part in CONTEXT_WRITES.items():
        setattr(store, method, wrap(part, getattr(store, method)))


async def until(check: Callable[[], bool], within: float = 10.0) -> bool:
    with anyio.move_on_after(within):
        while not check():  # noqa: ASYNC110 - the model server's thread and the store: no events
            await anyio.sleep(0.01)
    return check()
