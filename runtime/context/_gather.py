"""``gather``: run independent awaitables side by side inside one anyio task group, results in order.

Store queries queue on the backend together instead of each waiting for the event loop to come back
round; under load that round trip is much of a query's cost. ``once``: parts read side by side that
need the same rows (a thread's tasks) read them once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio

__all__ = ["gather", "once"]

T = TypeVar("T")


async def gather(calls: Sequence[Callable[[], Awaitable[Any]]]) -> list[Any]:
    results: list[Any] = [None] * len(calls)

    async def run(index: int, call: Callable[[], Awaitable[Any]]) -> None:
        results[index] = await call()

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(run, index, call)
    return results


def once(call: Callable[[], Awaitable[T]]) -> Callable[[], Awaitable[T]]:
    """``call()`` for several parts that need the same rows: the first to ask reads them, the others
    wait for that read (one of them cancelled leaves the read to the rest)."""
    task: asyncio.Future[T] | None = None

    async def shared() -> T:
        nonlocal task
        if task is None:
            task = asyncio.ensure_future(call())
        return await asyncio.shield(task)

    return shared
