"""How long the event loop was held: a task that asks to wake every ``interval`` seconds and notes how
late it woke.

Every chat shares one event loop. Synchronous work that holds it (a long save, a housekeeping pass,
a garbage-collector pause) delays every message of every chat by as long, and shows nowhere else:
frames pile up before the dispatcher, whose own queue waits stay at zero. The lateness of a timer
is that delay, measured from inside the loop; ``/status`` shows its recent percentiles and the worst.

One known holder is timed on its own: :class:`CollectorPauses` notes each full (oldest-generation)
garbage collection, so a long lag can be told apart from one.

And kept short: :class:`CollectorTuning`, applied once start-up is done, freezes what start-up built
(NoneBot, pydantic's schemas, the restored state: hundreds of thousands of objects that live as long
as the process) out of the collector's walks, so a full collection walks only what came after, and
sets the thresholds so young collections run every few thousand allocations instead of every few
messages and the middle generation stays small (``COLLECTOR_THRESHOLDS``). Undone at stop: what is
frozen is never collected, so a process that starts an edge again (the tests do) must not keep
freezing.
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
    "LoopLagMonitor",
    "LoopLagStatistics",
]

# gc.set_threshold's three numbers once start-up is done. A collection walks every object in the
# generations it collects, with the loop stopped, and each message leaves objects that live on (its
# event, its stored copy, its ``why`` result, its thread's state: about half of what a message
# allocates survives a young collection). So the young and middle generations are kept small: a
# young collection per 5,000 net allocations of tracked objects (the default 700 is one every few
# messages at a busy bot's rate; 20,000 made each young collection walk ~24,000 objects and each
# middle one, per 20 young, the survivors of all 20, ~260,000 objects: a 300 ms stall every ~17,000
# messages), a middle one per 10 young (~30,000 objects), and a full one considered per 400 middle
# ones, as rarely as before: one per 20 million allocations (it still runs only when the objects that
# survived since the last one are a quarter of those it walks).
COLLECTOR_THRESHOLDS = (5_000, 10, 400)


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
    """Full garbage collections (generation 2) since :meth:`install`: how many, and the longest.

    Such a collection walks every tracked object the process holds, with the loop stopped; at the
    scale of a busy bot's state it can take hundreds of milliseconds.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._started: float | None = None
        self.full = 0
        self.longest_ms = 0.0

    def install(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = self._clock()
        elif self._started is not None:
            self.full += 1
            self.longest_ms = max(self.longest_ms, (self._clock() - self._started) * 1000)
            self._started = None


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
