"""The loop-lag monitor: synchronous work that holds the event loop shows as lateness."""

from __future__ import annotations

import gc
import time
from collections import deque

import anyio
import pytest

from plugins.greywind.looplag import (
    CollectorPauses,
    CollectorTuning,
    FullCollections,
    LoopLagMonitor,
    YoungCollections,
)


@pytest.mark.anyio
async def test_a_held_loop_shows_as_lag_and_a_free_one_does_not() -> None:
    monitor = LoopLagMonitor(interval=0.02)
    async with anyio.create_task_group() as tg:
        tg.start_soon(monitor.run)
        await anyio.sleep(0.2)
        free = monitor.statistics()
        time.sleep(0.3)  # noqa: ASYNC251 -- the point: what a long synchronous save does to every chat
        await anyio.sleep(0.1)
        tg.cancel_scope.cancel()
    held = monitor.statistics()
    assert free.samples >= 3
    assert free.max_ms < 150
    assert held.max_ms >= 250
    assert held.worst_ms == held.max_ms


def test_percentiles_come_from_the_recent_samples_and_the_worst_is_kept() -> None:
    monitor = LoopLagMonitor(keep=4)
    for lag in (0.5, 0.001, 0.002, 0.003, 0.004, -0.001):
        monitor.note(lag)
    stats = monitor.statistics()
    assert stats.samples == 4
    assert stats.max_ms == pytest.approx(4.0)
    assert stats.worst_ms == pytest.approx(500.0)
    assert stats.p50_ms == pytest.approx(3.0)


def test_an_unusable_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="positive interval"):
        LoopLagMonitor(interval=0)


def test_full_collections_are_counted_and_timed() -> None:
    pauses = CollectorPauses()
    pauses.install()
    try:
        gc.collect(1)  # a young collection is not counted
        assert pauses.full == 0
        gc.collect()
        gc.collect()
    finally:
        pauses.uninstall()
    gc.collect()  # after uninstall: not seen
    assert pauses.full == 2
    assert pauses.longest_ms > 0.0


def test_the_collector_tuning_freezes_start_up_and_undoes_itself() -> None:
    before = gc.get_threshold()
    tuning = CollectorTuning(thresholds=(12_345, 11, 13))
    kept = [object() for _ in range(10)]  # what start-up built
    try:
        tuning.apply()
        tuning.apply()  # idempotent: applied once
        assert tuning.applied
        assert gc.get_threshold() == (12_345, 11, 13)
        assert tuning.frozen == gc.get_freeze_count() > len(kept)
        # What start-up built is out of the collector's walks, so a full collection is short.
        assert gc.get_freeze_count() > len(gc.get_objects())
    finally:
        tuning.undo()
        tuning.undo()
    assert not tuning.applied
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


class _Kept:
    """What a message leaves behind that lives on (an event, a stored copy): a tracked object."""

    __slots__ = ("n", "parts")

    def __init__(self, n: int, parts: list[int]) -> None:
        self.n, self.parts = n, parts


def test_no_collection_while_serving_walks_the_state_a_busy_bot_keeps() -> None:
    """Each message leaves objects that live on, and a collection walks every object in the
    generations it collects, with the loop stopped. With the tuning, the young and middle
    generations stay small however much state the bot keeps, and no full collection runs."""
    walked: list[tuple[int, int]] = []  # (generation, objects in the generations it collects)

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            generation = info["generation"]
            walked.append((generation, sum(len(gc.get_objects(g)) for g in range(generation + 1))))

    # The state, filling towards its caps (a full cap frees an old object per new one, and the
    # collections run on the net growth of tracked objects).
    state: deque[object] = deque(maxlen=500_000)
    tuning = CollectorTuning()
    tuning.apply()
    gc.callbacks.append(note)
    try:
        for n in range(60_000):  # messages: each makes some garbage and keeps some objects
            scratch = [[n, i] for i in range(10)]
            kept = [_Kept(n, parts) for parts in scratch[:5]]
            state.extend(kept)
            state.append((n, kept[0], [n]))
            del scratch, kept
    finally:
        gc.callbacks.remove(note)
        tuning.undo()
    assert len(state) == 360_000  # at the end: about 700,000 tracked objects of state
    assert walked, "no collection ran"
    assert all(generation < 2 for generation, _ in walked)
    assert max(objects for _, objects in walked) <= 80_000  # a fifth of the state at most


def _serve_with_full_buffers(messages: int, every: int | None) -> tuple[list[int], int, int]:
    """A bot whose bounded buffers are full: each message's kept records replace as many old ones.
    With ``every``, a :class:`YoungCollections` paced by those messages. The objects each collection
    walked (its generations' objects at its start), the most the young and middle generations held
    (what the next collection of them would walk), and the sweeps' collections."""
    walked: list[int] = []
    held = 0
    taken = 0
    sweeps = YoungCollections(lambda: taken, every=every) if every is not None else None

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            walked.append(sum(len(gc.get_objects(g)) for g in range(info["generation"] + 1)))

    state: deque[object] = deque(maxlen=60_000)
    tuning = CollectorTuning()
    for n in range(60_000):  # the buffers, filled at start-up
        state.append(_Kept(n, [n]))
    tuning.apply()
    gc.callbacks.append(note)
    try:
        for n in range(messages):
            scratch = [[n, i] for i in range(10)]  # garbage, freed at once
            state.extend(_Kept(n, parts) for parts in scratch[:5])  # kept, replacing old records
            del scratch
            taken += 1
            if sweeps is not None and n % 50 == 0:  # the sweeps' task wakes between messages
                sweeps.check()
            if n % 1_000 == 999:
                held = max(held, len(gc.get_objects(0)) + len(gc.get_objects(1)))
    finally:
        gc.callbacks.remove(note)
        tuning.undo()
    return walked, held, sweeps.collections if sweeps is not None else 0


def test_young_collections_come_by_messages_when_full_buffers_keep_net_allocations_flat() -> None:
    """Each message keeps records that replace old ones, so the tracked objects allocated minus
    those freed barely grow: left to its thresholds, the collector lets the young generation fill
    with the survivors of tens of thousands of messages and walks them all at once, with every chat
    held. Collected after every 1,000 messages, a walk holds about 1,000 messages' survivors."""
    _, held_late, _ = _serve_with_full_buffers(20_000, None)
    walked, held, collections = _serve_with_full_buffers(20_000, every=1_000)
    assert held_late > 100_000  # the records of most of the 20,000 messages, waiting for one walk
    assert collections >= 19
    assert walked
    assert max(walked) <= 25_000  # 1,000 to 1,050 messages' worth: 5 records and 5 lists each
    assert held <= 25_000


def test_a_full_collection_waits_for_a_quiet_moment_or_the_ceiling() -> None:
    """Due after ``due`` messages, it runs at the first check with no message for ``quiet`` seconds;
    a flood that never pauses gets one at ``ceiling`` messages, in the middle of it."""
    clock, taken, collected = [0.0], [0], []
    full = FullCollections(
        lambda: taken[0], due=100, ceiling=400, quiet=2.0, clock=lambda: clock[0], collect=collected.append
    )

    def traffic(messages: int) -> None:  # a message every 0.1 s, the check between messages
        for _ in range(messages):
            taken[0] += 1
            clock[0] += 0.1
            full.check()

    def pause(seconds: float) -> bool:
        clock[0] += seconds
        return full.check()

    traffic(99)
    assert not pause(10.0)  # quiet, but nothing due yet
    traffic(200)
    assert collected == []  # due since the 100th message, but never quiet
    assert not pause(1.0)
    assert pause(1.5)  # 2.5 s without a message
    assert collected == [2]
    assert (full.forced, full.pending) == (0, 0)
    assert not pause(10.0)  # one per due
    traffic(399)
    assert collected == [2]
    traffic(1)  # the ceiling: 400 messages without a pause of 2 s
    assert collected == [2, 2]
    assert full.forced == 1


def test_the_collectors_own_count_never_starts_a_full_collection() -> None:
    """The thresholds leave full collections to :class:`FullCollections`: more middle collections than
    CPython's count would wait for (6,000 with the previous thresholds), with survivors piling up in the
    oldest generation, and allocations that run the collector by its count, start none."""
    generations: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            generations.append(info["generation"])

    tuning = CollectorTuning()
    kept: list[list[int]] = []
    tuning.apply()
    gc.callbacks.append(note)
    try:
        for n in range(7_000):
            kept.extend([n, i] for i in range(40))  # survivors, moved to the oldest generation
            gc.collect(1)
        for _ in range(5):
            scratch = [[i] for i in range(20_000)]  # allocations: the collector's count runs it
            del scratch
    finally:
        gc.callbacks.remove(note)
        tuning.undo()
    assert generations.count(1) >= 7_000
    assert 0 in generations  # the count did run the collector
    assert 2 not in generations
