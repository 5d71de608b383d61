"""A packet's writes behind it: the model request does not wait for rows only the store needs.

A context build decides the topic thread, opens the session and records the user's turn. The packet
needs their ids and values, not the rows on disk, yet each write waited for the store's one write
connection, behind the chatter the writer is indexing, on the way to the model. Given a
:class:`DeferredWrites`, the resolver and the session manager work those values out in memory and
hand the writes over (:func:`write`): they run in the order given, on a task of their own (the store
still serving them as the @'s own work, :func:`runtime.urgency.left_behind`), while the packet goes
to the model. The episode waits for them before it acts on the model's answer: a reply is sent and
recorded only once its turn is on disk, so what a restart finds is what it found before.

A write that fails is logged ``context_part_failed`` and its part degraded, as a failing part of a
build is; the writes after it rely on it (a session of a thread not stored, the turn of a session not
stored) and are not made, their parts degraded too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from runtime.urgency import left_behind

__all__ = ["DeferredWrites", "write"]

log = structlog.get_logger("greywind.context")


class DeferredWrites:
    """One packet's writes, in order, each started as soon as the one before it is done."""

    __slots__ = ("_chat_id", "_count", "_failed", "_first_failure", "_last", "_session_steps")

    def __init__(self, chat_id: str) -> None:
        self._chat_id = chat_id
        self._count = 0
        self._failed: list[str] = []
        self._first_failure: int | None = None
        self._last: asyncio.Future[None] | None = None
        self._session_steps: int | None = None

    def add(self, part: str, call: Callable[[], Awaitable[object]]) -> None:
        """Write ``call()`` after the writes added before it; a failure degrades ``part``."""
        index = self._count
        self._count += 1
        previous = self._last
        priority = left_behind()  # taken now, while the build is still addressed work

        async def step() -> None:
            if previous is not None:
                await previous
            with priority:
                if self._first_failure is not None:
                    self._fail(part, "not written: a write it relies on failed")
                    return
                try:
                    await call()
                except Exception as exc:  # the packet is out already: its part degrades, nothing more
                    self._first_failure = index
                    self._fail(part, repr(exc))

        self._last = asyncio.ensure_future(step())

    def _fail(self, part: str, error: str) -> None:
        if part not in self._failed:  # once per part, as a build's parts are
            self._failed.append(part)
            log.warning("context_part_failed", part=part, chat_id=self._chat_id, error=error, deferred=True)

    def session_opened(self) -> None:
        """The writes added so far put the packet's session on disk."""
        self._session_steps = self._count

    async def wait(self) -> None:
        """Until every write added so far is done. A waiter cancelled meanwhile leaves them running."""
        last = self._last
        if last is not None:
            await asyncio.shield(last)

    @property
    def failed(self) -> tuple[str, ...]:
        """The parts whose write failed (or was not made), once :meth:`wait` returned."""
        return tuple(self._failed)

    def session_stored(self) -> bool:
        """Whether the writes up to :meth:`session_opened` all went through (once :meth:`wait` returned)."""
        steps = self._session_steps if self._session_steps is not None else self._count
        return self._first_failure is None or self._first_failure >= steps


async def write(writes: DeferredWrites | None, part: str, call: Callable[[], Awaitable[object]]) -> None:
    """``call()`` now, or behind the packet when ``writes`` is given."""
    if writes is None:
        await call()
    else:
        writes.add(part, call)
