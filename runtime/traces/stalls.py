"""What the event loop was doing while it was held: a watchdog thread that samples its stack.

The loop-lag monitor (:mod:`plugins.greywind.looplag`) says how long the loop was held, not by what.
With ``GREYWIND_STALL_TRACE`` naming a file, :class:`StallTrace` runs a heartbeat on the loop (a task
that notes the time every ``beat`` seconds) and a daemon thread that watches it: once the heartbeat
is more than ``threshold`` late, the thread samples the loop thread's Python stack
(``sys._current_frames()``) every ``every`` seconds until the loop comes round, then appends one JSON
line for the stall: when it began (wall and monotonic clock), how long the loop was held, the
collapsed stacks (root first, ``;``-separated ``file:function:line`` frames) with their sample counts,
the garbage collections that ran during it (per generation: how many, their milliseconds in all and
the longest, their CPU, what they freed, from ``gc.callbacks``), and the CPU the loop thread and the
whole process used meanwhile (the loop held by its own work, or waiting: for the GIL another thread
held, for a system call, for a machine busy elsewhere).

Without the variable nothing runs (:meth:`StallTrace.from_env` returns ``None``). The sampling costs
the loop nothing but the GIL the thread takes 200 times a second during a stall; the writing is the
thread's. A collection holds the GIL from start to end, so it shows as a stall with few samples and
the collection beside them.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import anyio

__all__ = ["ENV", "StallTrace", "collapse", "short_path"]

ENV = "GREYWIND_STALL_TRACE"
THRESHOLD_ENV = "GREYWIND_STALL_TRACE_MS"  # the threshold, in milliseconds (default 40)


def collapse(frame: FrameType | None, *, depth: int = 60) -> str:
    """``frame``'s stack, root first, as ``file:function:line`` frames joined by ``;`` (the innermost
    ``depth`` of them)."""
    frames: list[str] = []
    while frame is not None and len(frames) < depth:
        code = frame.f_code
        frames.append(f"{short_path(code.co_filename)}:{code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return ";".join(reversed(frames))


def short_path(filename: str) -> str:
    """The path from the package root on (``runtime/store/text.py``, ``asyncio/events.py``)."""
    parts = Path(filename).parts
    for root in ("site-packages", "runtime", "plugins", "tests", "bench"):
        if root in parts:
            at = len(parts) - 1 - parts[::-1].index(root)
            return "/".join(parts[at + 1 :] if root == "site-packages" else parts[at:])
    return "/".join(parts[-2:])


class StallTrace:
    """One stall record per time the loop was held longer than ``threshold`` seconds, in ``path``."""

    def __init__(
        self,
        path: Path,
        *,
        threshold: float = 0.040,
        every: float = 0.005,
        beat: float = 0.010,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if threshold <= 0 or every <= 0 or beat <= 0:
            raise ValueError("a stall trace needs a positive threshold, sampling interval and beat")
        self.path = path
        self._threshold, self._every, self._beat = threshold, every, beat
        self._clock = clock
        self._loop_thread: int | None = None
        self._last_beat = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Appended by the collector's callback, read and trimmed by the watchdog.
        self._collections: list[_Collection] = []
        self._lock = threading.RLock()  # the callback may run in the watchdog, inside it
        self.stalls = 0  # records written

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StallTrace | None:
        env = os.environ if env is None else env
        path = env.get(ENV)
        if not path:
            return None
        threshold = float(env.get(THRESHOLD_ENV) or 40) / 1000
        return cls(Path(path), threshold=threshold)

    # -- the loop's side ------------------------------------------------------------------------

    async def run(self) -> None:
        """The heartbeat, on the loop until cancelled; starts the watchdog the first time round."""
        self._loop_thread = threading.get_ident()
        self._last_beat = self._clock()
        self._start_watchdog()
        try:
            while True:
                await anyio.sleep(self._beat)
                self._last_beat = self._clock()
        finally:
            self.close()

    def close(self) -> None:
        self._stop.set()
        if self._collect in gc.callbacks:
            gc.callbacks.remove(self._collect)
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2)

    # -- the watchdog ---------------------------------------------------------------------------

    def _start_watchdog(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        if self._collect not in gc.callbacks:
            gc.callbacks.append(self._collect)
        self._thread = threading.Thread(target=self._watch, name="greywind-stall-trace", daemon=True)
        self._thread.start()

    def _collect(self, phase: str, info: dict[str, int]) -> None:
        now, cpu = self._clock(), time.thread_time()  # the collecting thread's own CPU
        with self._lock:
            if phase == "start":
                self._collections.append(
                    _Collection(info.get("generation", -1), now, cpu, threading.get_ident())
                )
            elif self._collections and (last := self._collections[-1]).ended is None:
                last.ended, last.cpu = now, cpu - last.cpu
                last.collected = info.get("collected", 0)

    def _watch(self) -> None:
        assert self._loop_thread is not None
        loop_thread, clock, every = self._loop_thread, self._clock, self._every
        loop_cpu = _thread_cpu_clock(loop_thread)
        late_after = self._threshold + self._beat
        with open(self.path, "a", encoding="utf-8", buffering=1) as out:
            seen = -1.0
            while not self._stop.wait(every):
                beat = self._last_beat
                if beat != seen:
                    # The loop came round since the last look: a stall's CPU is counted from here.
                    seen, free_at, free_cpu = beat, clock(), (loop_cpu(), time.process_time())
                if clock() - beat <= late_after:
                    if len(self._collections) > 256:
                        self._forget_collections(before=beat - 1.0)
                    continue
                stacks: Counter[str] = Counter()
                while self._last_beat == beat and not self._stop.is_set():
                    frame = sys._current_frames().get(loop_thread)
                    stacks[collapse(frame)] += 1
                    del frame
                    time.sleep(every)
                ended = self._last_beat if self._last_beat != beat else clock()
                window = (clock() - free_at, loop_cpu() - free_cpu[0], time.process_time() - free_cpu[1])
                record = self._record(beat, ended, stacks, window)
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                self.stalls += 1

    def _record(
        self, beat: float, ended: float, stacks: Counter[str], window: tuple[float, float, float]
    ) -> dict[str, Any]:
        held = max(0.0, ended - beat - self._beat)
        by_generation: dict[int, list[_Collection]] = {}
        with self._lock:
            for c in self._collections:
                if c.started < ended and (c.ended is None or c.ended > beat):
                    by_generation.setdefault(c.generation, []).append(c)
        collections = [
            {
                "generation": generation,
                "count": len(runs),
                "ms": _ms(sum((c.ended or ended) - c.started for c in runs)),
                "longest_ms": _ms(max((c.ended or ended) - c.started for c in runs)),
                "cpu_ms": _ms(sum(c.cpu for c in runs if c.ended is not None)),
                "collected": sum(c.collected for c in runs),
                "on_loop": sum(c.thread == self._loop_thread for c in runs),
            }
            for generation, runs in sorted(by_generation.items())
        ]
        wall, loop_cpu, process_cpu = window
        return {
            "at": time.time() - (self._clock() - beat),  # wall clock of the last beat before it
            "monotonic": round(beat, 6),
            "ms": _ms(held),
            "samples": sum(stacks.values()),
            "stacks": stacks.most_common(),
            "collections": collections,
            # From the first look after the last beat to the end: the loop thread's CPU and the whole
            # process's. Far below ``window_ms``: the loop waited (for the GIL, a system call, the
            # machine); the process's far above the loop's: other threads held the GIL.
            "window_ms": _ms(wall),
            "loop_cpu_ms": _ms(loop_cpu),
            "process_cpu_ms": _ms(process_cpu),
        }

    def _forget_collections(self, *, before: float) -> None:
        with self._lock:
            self._collections = [c for c in self._collections if c.ended is None or c.ended >= before]


@dataclass(slots=True)
class _Collection:
    generation: int
    started: float
    cpu: float  # the collecting thread's CPU clock at the start; once ended, the collection's CPU
    thread: int
    ended: float | None = None
    collected: int = 0


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _thread_cpu_clock(thread: int) -> Callable[[], float]:
    """The CPU clock of ``thread`` (a ``threading.get_ident()``), or a clock that stays at 0 where
    the platform has none."""
    try:
        clock_id = time.pthread_getcpuclockid(thread)
        time.clock_gettime(clock_id)
    except (AttributeError, OSError):
        return lambda: 0.0
    return partial(time.clock_gettime, clock_id)
