"""The periodic save against the collector: no young collection walks a copy of every kept event.

The kernel keeps up to a hundred thousand events (skipped chatter among them) and the save, every
two seconds, looks at all of them for the few that changed. A copy of them all (and a set of their
ids) alive while the changed ones were turned into store records was in the young generation when
those allocations set off a collection, so every young and middle collection in a save walked the
whole list: the middle ones were the longest loop stalls of a long run.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from runtime.kernel.events import EventState
from tests.app.conftest import make_config, running

pytestmark = pytest.mark.asyncio

KEPT = 30_000  # skipped chatter, never written: the kernel keeps as much of it as its cap allows
CHANGED = 1_500  # pending events the save writes


@contextmanager
def young_containers_seen(at_least: int) -> Iterator[list[int]]:
    """The sizes of lists and sets of ``at_least`` items or more found in the young generations
    whenever a collection starts, with collections made frequent."""
    seen: list[int] = []

    def look(phase: str, info: dict[str, int]) -> None:
        if phase != "start" or info["generation"] == 2:
            return
        for generation in range(info["generation"] + 1):
            seen.extend(
                len(obj)
                for obj in gc.get_objects(generation)
                if isinstance(obj, (list, set)) and len(obj) >= at_least
            )

    thresholds = gc.get_threshold()
    gc.callbacks.append(look)
    gc.set_threshold(50, 2, 1_000_000)
    try:
        yield seen
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(look)


async def test_a_save_runs_no_young_collection_over_every_kept_event(data_dir: Path) -> None:
    async with running(make_config(None), data_dir) as h:
        kernel, now = h.runtime.kernel, h.clock()
        for i in range(KEPT):
            kernel.events.create(
                kind="message", chat_id=f"group:{i % 200}", now=now, state=EventState.SKIPPED
            )
        await h.runtime.maintenance.save()
        for i in range(CHANGED):
            kernel.events.create(kind="reminder", chat_id=f"group:{i % 200}", now=now, not_before=now + 600)
        every_event = len(kernel.events)
        assert every_event > 5 * CHANGED
        gc.collect()
        with young_containers_seen(every_event - CHANGED) as seen:
            await h.runtime.maintenance.save()
        assert seen == []
        await h.runtime.writer.flush()
        stored = [e for e in await h.runtime.store.load_events() if e.kind == "reminder"]
        assert len(stored) == CHANGED
