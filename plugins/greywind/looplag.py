"""How long the event loop was held: a task that asks to wake every ``interval`` seconds and notes how
late it woke.

Every chat shares one event loop. Synchronous work that holds it (a long save, a housekeeping pass,
a garbage-collector pause) delays every message of every chat by as long, and shows nowhere else:
frames pile up before the dispatcher, whose own queue waits stay at zero. The lateness of a timer
is that delay, measured from inside the loop; ``/status`` shows its recent percentiles and the worst.

One known holder is timed on its own: :class:`CollectorPauses` notes every garbage collection, the
full (oldest-generation) ones apart, so a long lag can be told apart from one.

And kept short: :class:`CollectorTuning`, applied once start-up is done, freezes what start-up built
(NoneBot, pydantic's schemas, the restored state: hundreds of thousands of objects that live as long
as the process) out of the collector's walks, so a full collection walks only what came after, and
sets the thresholds so young collections run every few thousand allocations instead of every few
messages and the middle generation stays small (``COLLECTOR_THRESHOLDS``). Undone at stop: what is
frozen is never collected, so a process that starts an edge again (the tests do) must not keep
freezing.

And paced by the work, not by allocations: CPython starts a young collection when the tracked
objects allocated *minus those freed* pass the threshold. Once the bot's bounded buffers are full,
each message's new records replace old ones, so that net count barely moves while the young
generation fills with survivors: the collection comes late and walks all of them at once (40,000 to
100,000 records in the soak, 50 to 160 ms with every chat held). :class:`YoungCollections` collects
the young and middle generations itself after every ``every`` messages, so each walk holds the
survivors of that many messages only; every survivor is still walked once per generation it passes,
so the total is the same, in short pieces.

And the full collection, which walks everything the bot keeps, in a quiet moment:
:class:`FullCollections` runs it once it is due and no message has come for a while, rather than
wherever CPython's count would have started it, in the middle of the traffic.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio

__all__ = [
    "COLLECTOR_THRESHOLDS",
    "CollectorPauses",
    "CollectorTuning",
    "FullCollections",
    "LoopLagMonitor",
    "LoopLagStatistics",
    "YoungCollections",
]

# gc.set_threshold's three numbers once start-up is done. A collection walks every object in the
# generations it collects, with the loop stopped, and each message leaves objects that live on (its
# event, its stored copy, its ``why`` result, its thread's state: about half of what a message
# allocates survives a young collection). So the young and middle generations are kept small: a
# young collection per 5,000 net allocations of tracked objects (the default 700 is one every few
# messages at a busy bot's rate; 20,000 made each young collection walk ~24,000 objects and each
# middle one, per 20 young, the survivors of all 20, ~260,000 objects: a 300 ms stall every ~17,000
# messages), a middle one per 10 young (~30,000 objects), and a full one considered per 6,000 middle
# ones, and never a full one: middle collections also come from :class:`YoungCollections`, one per 250
# messages (the thresholds alone ran one per ~3,500 once the buffers were full), and CPython would
# start a full one after so many of them, whatever the traffic. :class:`FullCollections` starts it
# instead, in a quiet moment.
COLLECTOR_THRESHOLDS = (5_000, 10, 2**31 - 1)


@dataclass(frozen=True, slots=True)
class LoopLagStatistics:
    samples: int  # wake-ups kept (the most recent ``keep``)
    p50_ms: float
    p95_ms: float
    max_ms: float  # the worst of the kept samples
    worst_ms: float  # the worst since start


class LoopLagMonitor:
    def __init__(
        self,
        *,
        interval: float = 0.25,
        keep: int = 1_200,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval <= 0 or keep < 1:
            raise ValueError("a loop-lag monitor needs a positive interval and at least one sample")
        self._interval = interval
        self._clock = clock
        self._lags: deque[float] = deque(maxlen=keep)  # seconds late, most recent last
        self._worst = 0.0

    async def run(self) -> None:
        """Wake every ``interval`` until cancelled, noting how late each wake-up came."""
        interval, clock = self._interval, self._clock
        while True:
            asked = clock()
            await anyio.sleep(interval)
            self.note(clock() - asked - interval)

    def note(self, lag: float) -> None:
        lag = max(0.0, lag)
        self._lags.append(lag)
        self._worst = max(self._worst, lag)

    def statistics(self) -> LoopLagStatistics:
        ordered = sorted(self._lags)
        if not ordered:
            return LoopLagStatistics(0, 0.0, 0.0, 0.0, 0.0)

        def at(q: float) -> float:
            return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000

        return LoopLagStatistics(len(ordered), at(0.50), at(0.95), ordered[-1] * 1000, self._worst * 1000)


class CollectorPauses:
    """Garbage collections since :meth:`install`: how many, and the longest, the full ones
    (generation 2) apart from the young and middle ones.

    A collection walks every tracked object in the generations it collects, with the loop stopped;
    a full one walks all the process holds, at the scale of a busy bot's state hundreds of
    milliseconds. The young and middle ones are kept short by :class:`CollectorTuning` and
    :class:`YoungCollections`; their longest shows whether they are.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._started: float | None = None
        self.full = 0
        self.longest_ms = 0.0  # the longest full collection
        self.young = 0  # young and middle collections
        self.young_longest_ms = 0.0

    def install(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = self._clock()
            return
        if self._started is None:
            return
        took = (self._clock() - self._started) * 1000
        self._started = None
        if info.get("generation") == 2:
            self.full += 1
            self.longest_ms = max(self.longest_ms, took)
        else:
            self.young += 1
            self.young_longest_ms = max(self.young_longest_ms, took)


class YoungCollections:
    """A young-and-middle collection after every ``every`` messages, checked each ``interval``.

    ``work`` counts the messages taken so far (it only grows). Each collection walks what the
    messages since the last one left alive, and hands it to the oldest generation, so the
    collections the thresholds would start late, over far more, do not come.
    """

    def __init__(
        self,
        work: Callable[[], int],
        *,
        every: int = 250,
        interval: float = 0.25,
        collect: Callable[[int], object] = gc.collect,
    ) -> None:
        if every < 1 or interval <= 0:
            raise ValueError("young collections need a positive interval and at least one message between")
        self._work = work
        self._every = every
        self._interval = interval
        self._collect = collect
        self._last = work()
        self.collections = 0

    async def run(self) -> None:
        """Check every ``interval`` until cancelled."""
        while True:
            await anyio.sleep(self._interval)
            self.check()

    def check(self) -> bool:
        """Collect if ``every`` messages came since the last collection; whether it did."""
        done = self._work()
        if done - self._last < self._every:
            return False
        self._last = done
        self._collect(1)
        self.collections += 1
        return True


class FullCollections:
    """The full collection in a quiet moment, not in the middle of the traffic.

    A full collection walks every object the process keeps that start-up did not (the kernel's threads
    and events, the buffers, the caches: hundreds of thousands once a busy bot has served for hours),
    with every chat held until it is done. CPython starts one by its own count, whatever is going on;
    with :data:`COLLECTOR_THRESHOLDS` its count never does, and this does instead: once ``due``
    messages have been taken since the last one, at the first check that finds no message taken for
    ``quiet`` seconds; and once ``ceiling`` have been, whatever the traffic, so a flood that never
    pauses still gets its cyclic garbage back.

    ``work`` counts the messages taken so far (it only grows).
    """

    def __init__(
        self,
        work: Callable[[], int],
        *,
        due: int = 1_500_000,
        ceiling: int = 6_000_000,
        quiet: float = 2.0,
        interval: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
        collect: Callable[[int], object] = gc.collect,
    ) -> None:
        if not 0 < due <= ceiling or quiet <= 0 or interval <= 0:
            raise ValueError("full collections need 0 < due <= ceiling, a positive quiet time and interval")
        self._work = work
        self._due = due
        self._ceiling = ceiling
        self._quiet = quiet
        self._interval = interval
        self._clock = clock
        self._collect = collect
        self._last = work()  # messages taken at the last full collection
        self._seen = self._last
        self._seen_at = clock()  # when the count last moved
        self.collections = 0
        self.forced = 0  # of them, those the ceiling started in the middle of traffic

    @property
    def pending(self) -> int:
        """Messages taken since the last full collection."""
        return self._work() - self._last

    async def run(self) -> None:
        """Check every ``interval`` until cancelled."""
        while True:
            await anyio.sleep(self._interval)
            self.check()

    def check(self) -> bool:
        """Collect if one is due and the bot is quiet, or the ceiling is reached; whether it did."""
        now, done = self._clock(), self._work()
        if done != self._seen:
            self._seen, self._seen_at = done, now
        taken = done - self._last
        if taken < self._due:
            return False
        quiet = now - self._seen_at >= self._quiet
        if not quiet and taken < self._ceiling:
            return False
        self._last = done
        self._collect(2)
        self.collections += 1
        self.forced += not quiet
        return True


class CollectorTuning:
    """The collector as a long-running bot wants it: start-up's objects frozen, higher thresholds.

    :meth:`apply` collects once (start-up's garbage goes first), freezes the survivors into the
    permanent generation and sets ``thresholds``; :meth:`undo` puts back the thresholds found and
    unfreezes. Both are idempotent.
    """

    def __init__(self, thresholds: tuple[int, int, int] = COLLECTOR_THRESHOLDS) -> None:
        self._thresholds = thresholds
        self._previous: tuple[int, int, int] | None = None
        self.frozen = 0  # objects frozen by apply()

    @property
    def applied(self) -> bool:
        return self._previous is not None

    def apply(self) -> None:
        if self._previous is not None:
            return
        self._previous = gc.get_threshold()
        gc.collect()
        gc.freeze()
        self.frozen = gc.get_freeze_count()
        gc.set_threshold(*self._thresholds)

    def undo(self) -> None:
        if self._previous is None:
            return
        gc.set_threshold(*self._previous)
        self._previous = None
        gc.unfreeze()
