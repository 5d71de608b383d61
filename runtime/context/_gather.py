"""``gather``: run independent awaitables side by side inside one anyio task group, results in order.

Store queries queue on the backend together instead of each waiting for the event loop to come back
round; under load that round trip is much of a query's cost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

__all__ = ["gather"]


async def gather(calls: Sequence[Callable[[], Awaitable[Any]]]) -> list[Any]:
    results: list[Any] = [None] * len(calls)

    async def run(index: int, call: Callable[[], Awaitable[Any]]) -> None:
        results[index] = await call()

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(run, index, call)
    return results
