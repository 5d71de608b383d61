"""Where the process's memory grew: ``tracemalloc`` snapshots compared over a run.

RSS says that the bot grew, not by what. With ``GREYWIND_MEMORY_TRACE`` naming a file,
:class:`MemoryTrace` waits ``after`` seconds (start-up and the first fill of the caches are not what a
leak hunt asks about), starts ``tracemalloc`` keeping ``frames`` frames per allocation, takes a first
snapshot, then another every ``every`` seconds and once more when stopped. Each later snapshot is
grouped by the allocating line (by the whole ``frames``-deep traceback when ``frames`` > 1) and
compared twice, with the first snapshot and with the previous one, and appended as one JSON line: when,
how long tracing has run, the traced size now and at its peak, the process's RSS, what taking and
grouping the snapshot and comparing it took, and for each comparison the growth summed over every
place and the ``top`` places that grew most (``where``, KB grown, blocks grown, KB held now).

Only what was allocated after tracing began is traced, and its frees; a record allocated before and
freed since is not subtracted. So where a capped buffer replaces its records, each replacement counts
as growth until the buffer has turned over once since tracing began: read the comparisons with the
previous snapshot from then on, whose sum falls toward 0 in a process that levels off.

Tracing is not free. Every allocation is recorded while it runs, so the bot runs several times slower
(feed it a stream it keeps up with, or the backlog's own buffers become the growth), and each snapshot
holds the GIL while it is taken, for seconds once hundreds of thousands of blocks are traced; the
snapshots and comparisons run on a worker thread, so the loop goes on between. Without the variable
nothing runs (:meth:`MemoryTrace.from_env` returns ``None``).
"""

from __future__ import annotations

import json
import math
import os
import time
import tracemalloc
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from runtime.traces.stalls import short_path

__all__ = ["AFTER_ENV", "ENV", "EVERY_ENV", "FRAMES_ENV", "MemoryTrace"]

ENV = "GREYWIND_MEMORY_TRACE"
AFTER_ENV = "GREYWIND_MEMORY_TRACE_AFTER"  # seconds before tracing starts (default 60)
EVERY_ENV = "GREYWIND_MEMORY_TRACE_EVERY"  # seconds between snapshots (default 60)
FRAMES_ENV = "GREYWIND_MEMORY_TRACE_FRAMES"  # frames kept per allocation (default 1)

# Places whose allocations are the tracing's own (tracemalloc's snapshots, this module's tables of
# the first and previous one) or the import machinery's: they say nothing about the bot. Matched on a
# place's innermost frame, after grouping: a filter on every trace (``Snapshot.filter_traces``) took
# seconds a snapshot in the bot.
_IGNORED = frozenset(
    {
        tracemalloc.__file__,
        __file__,
        "<frozen importlib._bootstrap>",
        "<frozen importlib._bootstrap_external>",
        "<unknown>",
    }
)
Sizes = dict[tracemalloc.Traceback, tuple[int, int]]  # a place -> (bytes, blocks) it holds


class MemoryTrace:
    """One growth record per ``every`` seconds of tracing, in ``path`` (see the module docstring)."""

    def __init__(
        self, path: Path, *, after: float = 60.0, every: float = 60.0, frames: int = 1, top: int = 25
    ) -> None:
        if after < 0 or every <= 0 or frames < 1 or top < 1:
            raise ValueError("a memory trace needs after >= 0, every > 0, frames >= 1 and top >= 1")
        self.path = path
        self.after, self.every, self.frames, self.top = after, every, frames, top
        self.records = 0  # lines written
        self._first: Sizes | None = None  # what each place held at the first snapshot
        self._previous: Sizes | None = None  # and at the latest
        self._started_at = 0.0
        self._owns_tracing = False  # started here, so stopped here (not a PYTHONTRACEMALLOC run's)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> MemoryTrace | None:
        env = os.environ if env is None else env
        path = env.get(ENV)
        if not path:
            return None
        return cls(
            Path(path),
            after=_number(env, AFTER_ENV, 60.0, minimum=0.0),
            every=_number(env, EVERY_ENV, 60.0, minimum=0.001),
            frames=int(_number(env, FRAMES_ENV, 1, minimum=1, whole=True)),
        )

    async def run(self) -> None:
        """Wait, start tracing, write a record every ``every`` seconds until cancelled, then a last one."""
        try:
            await anyio.sleep(self.after)
            await anyio.to_thread.run_sync(self.start)
            while True:
                await anyio.sleep(self.every)
                await anyio.to_thread.run_sync(self.record)
        finally:
            if self._first is not None:
                self.record()  # the stop's record, on the loop: the process is ending anyway
            self.stop()

    def start(self) -> None:
        """Start tracing (unless it runs already) and take the snapshot later ones are compared with."""
        if not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)
            self._owns_tracing = True
        self._started_at = time.monotonic()
        self._first = self._previous = self._sizes()

    def stop(self) -> None:
        self._first = self._previous = None
        if self._owns_tracing:
            tracemalloc.stop()
            self._owns_tracing = False

    def record(self) -> dict[str, Any]:
        """Compare a new snapshot with the first and with the previous one, append the record and
        return it."""
        if self._first is None or self._previous is None:
            raise RuntimeError("the memory trace has not started")
        began = time.perf_counter()
        now = self._sizes()
        taken = time.perf_counter()
        since_first = self._growth(self._first, now)
        since_previous = self._growth(self._previous, now)
        self._previous = now
        compared = time.perf_counter()
        traced, peak = tracemalloc.get_traced_memory()
        record = {
            "at": time.time(),
            "traced_s": round(time.monotonic() - self._started_at, 1),
            "traced_mb": _mb(traced),
            "peak_mb": _mb(peak),
            "rss_mb": _rss_mb(),
            "snapshot_ms": round((taken - began) * 1000, 1),
            "compare_ms": round((compared - taken) * 1000, 1),
            "since_first": since_first,
            "since_previous": since_previous,
        }
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.records += 1
        return record

    def _growth(self, before: Sizes, now: Sizes) -> dict[str, Any]:
        """What grew from ``before`` to ``now``: in all (KB), and the ``top`` places, most first."""
        grown = []
        for place, (size, count) in now.items():
            old_size, old_count = before.get(place, (0, 0))
            grown.append((size - old_size, count - old_count, size, place))
        gone = sum(size for place, (size, _) in before.items() if place not in now)
        grown.sort(key=lambda g: g[0], reverse=True)
        return {
            "kb": _kb(sum(g[0] for g in grown) - gone),
            "top": [
                {
                    # root first, as tracemalloc orders a traceback
                    "where": ";".join(f"{short_path(f.filename)}:{f.lineno}" for f in place),
                    "kb": _kb(size_diff),
                    "blocks": count_diff,
                    "kb_now": _kb(size),
                }
                for size_diff, count_diff, size, place in grown[: self.top]
            ],
        }

    def _sizes(self) -> Sizes:
        """What each place (allocating line, or traceback) holds now, the ignored places left out."""
        grouping = "lineno" if self.frames == 1 else "traceback"
        statistics = tracemalloc.take_snapshot().statistics(grouping)
        return {
            stat.traceback: (stat.size, stat.count)
            for stat in statistics
            if stat.traceback[-1].filename not in _IGNORED
        }


def _number(
    env: Mapping[str, str], name: str, default: float, *, minimum: float, whole: bool = False
) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw) if whole else float(raw)
        valid = value >= minimum and math.isfinite(value)  # NaN fails the first
    except ValueError:
        valid = False
    if not valid:
        kind = "a whole number" if whole else "a number"
        raise ValueError(f"{name} must be {kind} of at least {minimum:g}, not {raw!r}")
    return value


def _kb(size: int) -> float:
    return round(size / 1024, 1)


def _mb(size: int) -> float:
    return round(size / (1024 * 1024), 1)


def _rss_mb() -> float | None:
    """This process's resident set, from ``/proc`` (``None`` where there is none)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return round(pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024), 1)
