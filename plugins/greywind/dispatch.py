"""Per-message work, bounded and tracked: a fixed set of workers in the lifespan's task group.

Every incoming message becomes a job keyed by its chat. Jobs of one chat always land on the same
worker, so a chat's messages reach the runtime in the order they arrived; different chats run side by
side on up to ``workers`` workers. Each worker's queue holds ``queue_size`` jobs; when it is full,
``submit`` waits (back-pressure to the connection) instead of dropping the message or growing without
bound. A job that raises is logged with its chat and counted; the worker goes on with the next one.

``close()`` stops taking jobs and lets the workers finish what is queued; the lifespan cancels the
task group after a grace period if they do not.
"""

from __future__ import annotations

import time
import zlib
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import anyio
import structlog
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["Dispatcher", "DispatcherClosedError", "DispatcherStatistics", "Job"]

log = structlog.get_logger("greywind.dispatch")

Job = Callable[[], Awaitable[None]]
_Item = tuple[str, Job, float]  # chat key, job, when it was queued (monotonic seconds)
# Queue waits kept for the percentiles in statistics(): the most recent ones.
_WAIT_SAMPLES = 1_024


class DispatcherClosedError(RuntimeError):
    """``submit`` after ``close()``: the bot is shutting down."""


@dataclass(frozen=True, slots=True)
class DispatcherStatistics:
    workers: int
    queued: int  # jobs waiting in all queues
    running: int
    submitted: int
    done: int
    failed: int
    max_queued: int  # the largest backlog seen in one chat's queue
    wait_p50_ms: float  # time from submit to start, over the last jobs
    wait_p95_ms: float


class Dispatcher:
    def __init__(self, *, workers: int = 16, queue_size: int = 256) -> None:
        if workers < 1 or queue_size < 1:
            raise ValueError("a dispatcher needs at least one worker and a queue of at least one")
        self._workers = workers
        self._queue_size = queue_size
        # Created at start: streams that are never started would never be closed either.
        self._streams: list[tuple[MemoryObjectSendStream[_Item], MemoryObjectReceiveStream[_Item]]] = []
        self._closed = False
        self._started = False
        self._running = 0
        self._submitted = 0
        self._done = 0
        self._failed = 0
        self._max_queued = 0
        self._waits: deque[float] = deque(maxlen=_WAIT_SAMPLES)
        self._idle = anyio.Event()
        self._idle.set()

    def start(self, task_group: TaskGroup) -> None:
        """Start the workers in ``task_group`` (the lifespan's)."""
        if self._started:
            raise RuntimeError("dispatcher already started")
        self._started = True
        if self._closed:
            return
        size = self._queue_size
        self._streams = [anyio.create_memory_object_stream[_Item](size) for _ in range(self._workers)]
        for index, (_, receive) in enumerate(self._streams):
            task_group.start_soon(self._work, receive, name=f"greywind-dispatch-{index}")

    def _shard(self, key: str) -> int:
        return zlib.crc32(key.encode("utf-8")) % self._workers

    async def submit(self, key: str, job: Job) -> None:
        """Queue ``job`` behind earlier jobs with the same ``key``; waits while that queue is full."""
        if self._closed or not self._streams:
            raise DispatcherClosedError("the dispatcher is closed" if self._closed else "not started")
        send, _ = self._streams[self._shard(key)]
        self._submitted += 1
        if self._idle.is_set():
            self._idle = anyio.Event()
        try:
            await send.send((key, job, time.monotonic()))
        except BaseException as exc:  # closed under us, or the caller was cancelled while waiting
            self._submitted -= 1
            if self._done >= self._submitted:
                self._idle.set()
            if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError):
                raise DispatcherClosedError("the dispatcher is closed") from None
            raise
        self._max_queued = max(self._max_queued, send.statistics().current_buffer_used)

    def submit_nowait(self, key: str, job: Job) -> None:
        """Queue ``job`` if its queue has room; ``anyio.WouldBlock`` when it is full."""
        if self._closed or not self._streams:
            raise DispatcherClosedError("the dispatcher is closed" if self._closed else "not started")
        send, _ = self._streams[self._shard(key)]
        send.send_nowait((key, job, time.monotonic()))  # WouldBlock propagates: the caller decides
        self._submitted += 1
        if self._idle.is_set():
            self._idle = anyio.Event()
        self._max_queued = max(self._max_queued, send.statistics().current_buffer_used)

    def _queued(self) -> int:
        return sum(send.statistics().current_buffer_used for send, _ in self._streams)

    async def _work(self, receive: MemoryObjectReceiveStream[_Item]) -> None:
        async with receive:
            async for key, job, queued_at in receive:
                self._waits.append(time.monotonic() - queued_at)
                self._running += 1
                try:
                    # Every log line the runtime writes while handling this job names its chat.
                    with structlog.contextvars.bound_contextvars(chat_id=key):
                        await job()
                except Exception:
                    self._failed += 1
                    log.exception("job_failed", chat_id=key)
                finally:
                    self._running -= 1
                    self._done += 1
                    if self._done >= self._submitted:
                        self._idle.set()

    async def wait_idle(self) -> None:
        """Return once every submitted job has finished."""
        while self._done < self._submitted:
            await self._idle.wait()

    def close(self) -> None:
        """Take no more jobs; the workers finish the queued ones and return. Idempotent."""
        self._closed = True
        for send, _ in self._streams:
            send.close()

    def statistics(self) -> DispatcherStatistics:
        return DispatcherStatistics(
            workers=self._workers,
            queued=self._queued(),
            running=self._running,
            submitted=self._submitted,
            done=self._done,
            failed=self._failed,
            max_queued=self._max_queued,
            wait_p50_ms=_percentile(self._waits, 0.50) * 1000,
            wait_p95_ms=_percentile(self._waits, 0.95) * 1000,
        )


def _percentile(values: Iterable[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
