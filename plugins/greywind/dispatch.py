"""Per-message work, bounded and tracked: a fixed set of workers in the lifespan's task group.

Every incoming message becomes a job keyed by its chat. Each chat has its own queue, and a chat is
on at most one worker at a time, so a chat's messages reach the runtime in the order they arrived;
different chats run side by side on up to ``workers`` workers. Chats take turns, one job per turn:
a chat with jobs waiting goes to the back of the line after each one, so a flood in one chat takes
one worker and its own queue, never the others'. Jobs submitted with ``priority=True`` (a message
addressed to the bot, a command) put their chat in a line that is served first, and one worker more
than ``workers`` serves that line only: chatter may hold every other worker a long time (under a
flood each waits for the store's room), and an @ does not wait for any of them.

Each chat's queue holds ``queue_size`` jobs; when it is full, ``submit`` waits (back-pressure to the
connection) instead of dropping the message or growing without bound. A priority job never waits:
it is queued past the bound (the frame guard bounds how many there can be). A job that raises is
logged with its chat and counted; the worker goes on with the next one.

A worker hands the event loop back between jobs, whether or not a job suspended: a backlog of jobs
that never wait (the runtime's message path) does not hold the loop for the rest of the bot.

A job may say since when it has waited (``since``: its message's arrival); :meth:`Dispatcher.oldest_since`
is the earliest of the queued ones, part of how far the bot has heard (:mod:`plugins.greywind.heard`).

``close()`` stops taking jobs and lets the workers finish what is queued; the lifespan cancels the
task group after a grace period if they do not.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import anyio
import anyio.lowlevel
import structlog
from anyio.abc import TaskGroup
from structlog.contextvars import bind_contextvars, reset_contextvars

__all__ = ["Dispatcher", "DispatcherClosedError", "DispatcherStatistics", "Job"]

log = structlog.get_logger("greywind.dispatch")

Job = Callable[[], Awaitable[None]]
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
    chats_waiting: int = 0  # chats with jobs queued
    priority_submitted: int = 0
    priority_wait_p95_ms: float = 0.0


class _Chat:
    """One chat's queue: (job, queued at, priority, since) in arrival order."""

    __slots__ = ("jobs", "priority", "room", "running")

    def __init__(self) -> None:
        self.jobs: deque[tuple[Job, float, bool, float | None]] = deque()
        self.priority = 0  # priority jobs among ``jobs``
        self.running = False
        self.room: anyio.Event | None = None  # made when a submitter waits for room; set when a job leaves


class Dispatcher:
    def __init__(self, *, workers: int = 16, queue_size: int = 256) -> None:
        if workers < 1 or queue_size < 1:
            raise ValueError("a dispatcher needs at least one worker and a queue of at least one")
        self._workers = workers
        self._queue_size = queue_size
        self._chats: dict[str, _Chat] = {}
        # Chats with jobs and no worker, in turn order: those with a priority job in the first line.
        self._urgent: deque[str] = deque()
        self._ready: deque[str] = deque()
        self._idle_workers: deque[anyio.Event] = deque()
        self._urgent_idle: anyio.Event | None = None  # the worker kept for the first line, idle
        self._closed = False
        self._started = False
        self._running = 0
        self._queued = 0
        self._submitted = 0
        self._priority_submitted = 0
        self._done = 0
        self._failed = 0
        self._max_queued = 0
        self._waits: deque[float] = deque(maxlen=_WAIT_SAMPLES)
        self._priority_waits: deque[float] = deque(maxlen=_WAIT_SAMPLES)
        # Made only while someone waits for the queues to drain (an event per job would cost more
        # than the dispatching itself).
        self._idle: anyio.Event | None = None

    @property
    def submitted(self) -> int:
        """Jobs submitted since start (one per message taken, and the few commands and notices)."""
        return self._submitted

    def start(self, task_group: TaskGroup) -> None:
        """Start the workers in ``task_group`` (the lifespan's)."""
        if self._started:
            raise RuntimeError("dispatcher already started")
        self._started = True
        if self._closed:
            return
        for index in range(self._workers):
            task_group.start_soon(self._work, name=f"greywind-dispatch-{index}")
        task_group.start_soon(self._work, True, name="greywind-dispatch-addressed")

    def _check_open(self) -> None:
        if self._closed or not self._started:
            raise DispatcherClosedError("the dispatcher is closed" if self._closed else "not started")

    async def submit(self, key: str, job: Job, *, priority: bool = False, since: float | None = None) -> None:
        """Queue ``job`` behind earlier jobs with the same ``key``; waits while that queue is full
        (a ``priority`` job never waits). ``since``: when what it handles arrived, if it says."""
        self._check_open()
        chat = self._chats.get(key)
        while not priority and chat is not None and len(chat.jobs) >= self._queue_size:
            if chat.room is None:
                chat.room = anyio.Event()
            await chat.room.wait()
            self._check_open()
            chat = self._chats.get(key)
        self._enqueue(key, job, priority, since)

    def submit_nowait(self, key: str, job: Job, *, priority: bool = False) -> None:
        """Queue ``job`` if its queue has room; ``anyio.WouldBlock`` when it is full."""
        self._check_open()
        chat = self._chats.get(key)
        if not priority and chat is not None and len(chat.jobs) >= self._queue_size:
            raise anyio.WouldBlock
        self._enqueue(key, job, priority, None)

    def _enqueue(self, key: str, job: Job, priority: bool, since: float | None) -> None:
        chat = self._chats.get(key)
        if chat is None:
            chat = self._chats[key] = _Chat()
        chat.jobs.append((job, time.monotonic(), priority, since))
        self._queued += 1
        self._submitted += 1
        self._max_queued = max(self._max_queued, len(chat.jobs))
        if priority:
            self._priority_submitted += 1
            chat.priority += 1
            if chat.priority == 1 and not chat.running and len(chat.jobs) > 1:
                self._ready.remove(key)  # it was waiting its turn in the other line
                self._urgent.append(key)
                self._wake_for(True)
                return
        if not chat.running and len(chat.jobs) == 1:
            (self._urgent if chat.priority else self._ready).append(key)
            self._wake_for(bool(chat.priority))

    def _wake_for(self, urgent: bool) -> None:
        """A chat joined a line: wake the kept worker for the first line, else an idle one."""
        if urgent and self._urgent_idle is not None:
            self._urgent_idle.set()
            self._urgent_idle = None
        elif self._idle_workers:
            self._idle_workers.popleft().set()

    def _next(self, urgent_only: bool = False) -> tuple[str, _Chat] | None:
        if self._urgent:
            key = self._urgent.popleft()
        elif self._ready and not urgent_only:
            key = self._ready.popleft()
        else:
            return None
        chat = self._chats[key]
        chat.running = True
        return key, chat

    async def _work(self, urgent_only: bool = False) -> None:
        while True:
            # A job may run to its end without suspending (the runtime's message path does): without
            # this, a worker with a backlog would hold the loop through all of it.
            await anyio.lowlevel.checkpoint()
            taken = self._next(urgent_only)
            if taken is None:
                if self._closed:
                    return
                wake = anyio.Event()
                if urgent_only:
                    self._urgent_idle = wake
                else:
                    self._idle_workers.append(wake)
                try:
                    await wake.wait()
                finally:
                    if wake in self._idle_workers:
                        self._idle_workers.remove(wake)
                    if self._urgent_idle is wake:
                        self._urgent_idle = None
                continue
            key, chat = taken
            job, queued_at, priority, _ = chat.jobs.popleft()
            self._queued -= 1
            waited = time.monotonic() - queued_at
            self._waits.append(waited)
            if priority:
                chat.priority -= 1
                self._priority_waits.append(waited)
            if chat.room is not None:
                chat.room.set()
                chat.room = None
            self._running += 1
            try:
                # Every log line the runtime writes while handling this job names its chat (bound and
                # reset by token: ``bound_contextvars`` copies the whole context for each job).
                bound = bind_contextvars(chat_id=key)
                try:
                    await job()
                finally:
                    reset_contextvars(**bound)
            except Exception:
                self._failed += 1
                log.exception("job_failed", chat_id=key)
            finally:
                self._running -= 1
                self._done += 1
                chat.running = False
                if chat.jobs:
                    (self._urgent if chat.priority else self._ready).append(key)
                    self._wake_for(bool(chat.priority))
                else:
                    del self._chats[key]
                if self._done >= self._submitted and self._idle is not None:
                    self._idle.set()
                    self._idle = None

    def oldest_since(self) -> float | None:
        """The earliest ``since`` of the queued jobs (None: none queued says): each chat's first job
        that says, the oldest of its queue. A look at every chat with jobs waiting."""
        firsts = (
            next((job[3] for job in chat.jobs if job[3] is not None), None) for chat in self._chats.values()
        )
        return min((since for since in firsts if since is not None), default=None)

    async def wait_idle(self) -> None:
        """Return once every submitted job has finished."""
        while self._done < self._submitted:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()

    def close(self) -> None:
        """Take no more jobs; the workers finish the queued ones and return. Idempotent."""
        self._closed = True
        while self._idle_workers:
            self._idle_workers.popleft().set()
        if self._urgent_idle is not None:
            self._urgent_idle.set()
        for chat in self._chats.values():
            if chat.room is not None:
                chat.room.set()

    def statistics(self) -> DispatcherStatistics:
        return DispatcherStatistics(
            workers=self._workers,
            queued=self._queued,
            running=self._running,
            submitted=self._submitted,
            done=self._done,
            failed=self._failed,
            max_queued=self._max_queued,
            wait_p50_ms=_percentile(self._waits, 0.50) * 1000,
            wait_p95_ms=_percentile(self._waits, 0.95) * 1000,
            chats_waiting=len(self._urgent) + len(self._ready),
            priority_submitted=self._priority_submitted,
            priority_wait_p95_ms=_percentile(self._priority_waits, 0.95) * 1000,
        )


def _percentile(values: Iterable[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
