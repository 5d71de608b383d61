"""``StoreWriter``: takes writes off the per-message path and commits them in batches.

Producers ``await writer.put(item)`` (or ``put_nowait``); a background loop (``run``, started by the
lifespan's task group, or ``async with writer``) gathers what arrived during one flush interval — or
up to ``flush_max_items`` — and commits it with one ``store.write(batch)``: one transaction (cut
short where another write waits for the database, the rest in the next).

Guarantees:

- **Back-pressure for those who can wait, a counted overflow for those who cannot.** The queue is
  bounded. A crowded queue (full but for a tenth, kept for the writes that cannot wait: the bot's own
  sent messages, recalls) makes ``put`` wait; a full one makes ``put_nowait`` raise
  ``WriterFullError``. The message path must never wait on a failing store, so it calls ``offer``: on
  a full queue the item is dropped, counted in ``dropped`` and logged (``store.writes_dropped``, with
  counts, at most every few seconds). Before it takes a message, it waits for ``room`` (bounded)
  while the queue is crowded: while the store is healthy, only slower than the messages come (a
  flood), room comes back with the next batch, so a flood slows the message path to the store's pace
  instead of losing writes; while the store fails, ``room`` returns at once.
- **A batch holds nobody up.** The store may commit a batch in parts to let another write in
  between, an @'s own above all (``PartlyWrittenError`` when a later part fails): order is kept,
  and a retry repeats only what is not in.
- **Failed writes are retried.** A ``StoreError`` (full disk, I/O error, a lock held too long) keeps
  the batch and retries it with exponential backoff, forever, logging and counting each failure;
  meanwhile the queue fills (``put`` waits, ``offer`` drops). ``failing_since`` says since when the
  store has refused every commit (``None`` while healthy), for ``/status``. Any other exception
  means a record the store cannot take (a payload that is not JSON, say): the batch is split until
  the bad item is alone, and that one item is logged with its error and counted in ``rejected``.
- **Shutdown flushes, on time.** ``aclose(timeout)`` stops new writes, commits everything queued and
  returns. If the store still refuses when the deadline passes, the commit in flight is abandoned
  (its transaction rolls back), ``store.writes_lost`` is logged with how many items were lost and
  the store's last error, and ``WriterError`` is raised naming the same count. Call it before
  cancelling the task group that runs the loop: a cancelled loop cannot flush.
- **Reads do not see queued writes.** A reader that needs what was just put keeps its own window of
  recent messages (the runtime's recent buffer); ``await writer.flush()`` waits for a commit, which
  a failing store may never make, so nothing on the reply path calls it.
- **The kill -9 bound.** Committed is durable (SQLite WAL). After ``kill -9``, what is missing is what
  was queued since the last commit: at most one flush interval of items (plus the one commit that was
  in flight). ``tests/store/test_kill.py`` checks this with a real killed process.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

import structlog

from runtime.config.store import StoreConfig
from runtime.store.errors import PartlyWrittenError, StoreClosedError, StoreError, WriterError
from runtime.store.records import (
    ActivationDone,
    EventRecord,
    MessageRecalled,
    ScheduledActivation,
    SpeechRecord,
    StoredMessage,
    ToolCallRecord,
    TopicLink,
    WriteItem,
)
from runtime.store.roles import BatchWrites

log = structlog.get_logger("greywind.store.writer")

# Dropped writes are logged at most this often (seconds), each line with the count since the last.
DROP_LOG_INTERVAL = 5.0
# After aclose's deadline, how long the abandoned commit gets to roll back (seconds).
ABANDON_WAIT = 1.0

_WRITE_TYPES = (
    StoredMessage,
    MessageRecalled,
    TopicLink,
    SpeechRecord,
    EventRecord,
    ScheduledActivation,
    ActivationDone,
    ToolCallRecord,
)


class WriterFullError(StoreError):
    """Raised by ``put_nowait`` when the queue is full (``put`` waits instead)."""


@dataclass(frozen=True, slots=True)
class WriterStatistics:
    queued: int
    queue_max: int
    in_flight: int
    enqueued: int
    written: int
    batches: int
    failures: int
    rejected: int
    dropped: int
    max_batch: int
    last_flush_seconds: float
    last_error: str | None
    failing_since: float | None  # wall-clock time of the first failed commit since the last good one
    running: bool
    closed: bool


class StoreWriter:
    """Batches writes into one transaction per flush interval. See the module docstring."""

    def __init__(
        self,
        store: BatchWrites,
        *,
        flush_interval: float = 0.2,
        flush_max_items: int = 500,
        queue_max: int = 10_000,
        retry_backoff: float = 0.2,
        retry_backoff_max: float = 30.0,
        close_timeout: float = 30.0,
    ) -> None:
        self._store = store
        self._interval = flush_interval
        self._max_items = flush_max_items
        self._queue: asyncio.Queue[WriteItem] = asyncio.Queue(maxsize=queue_max)
        self._queue_max = queue_max
        self._crowded_at = queue_max - queue_max // 10
        self._retry_backoff = retry_backoff
        self._retry_backoff_max = retry_backoff_max
        self._close_timeout = close_timeout
        self._arrived = asyncio.Event()  # something was queued (wakes an idle loop)
        self._wake = asyncio.Event()  # commit now: flush(), a full batch, or closing
        self._flush_upto = 0
        self._progress = asyncio.Condition()
        self._room = asyncio.Condition()  # the message path waiting for room in a crowded queue
        self._room_waiting = 0
        self._closing = False
        self._closing_event = asyncio.Event()
        self._closed = False
        self._running = False
        self._task: asyncio.Task[None] | None = None
        self._in_flight = 0
        self._enqueued = 0
        self._done = 0  # written + rejected
        self._written = 0
        self._batches = 0
        self._failures = 0
        self._rejected = 0
        self._max_batch = 0
        self._last_flush = 0.0
        self._last_error: str | None = None
        self._give_up_at: float | None = None
        self._dropped = 0
        self._dropped_logged = 0
        self._dropped_log_at = 0.0
        self._failing_since: float | None = None
        self._commit_task: asyncio.Task[None] | None = None
        self._abandoned = False
        self._stop_error: WriterError | None = None

    @classmethod
    def from_config(cls, store: BatchWrites, config: StoreConfig) -> StoreWriter:
        return cls(
            store,
            flush_interval=config.flush_interval_ms / 1000,
            flush_max_items=config.flush_max_items,
            queue_max=config.queue_max,
            retry_backoff=config.retry_backoff_ms / 1000,
            retry_backoff_max=config.retry_backoff_max_ms / 1000,
        )

    # -- producers ------------------------------------------------------------------------------

    def _accept(self, item: WriteItem) -> None:
        if self._closing:
            raise StoreClosedError("the store writer is closed")
        if not isinstance(item, _WRITE_TYPES):
            raise TypeError(f"not a write item: {item!r}")

    def _enqueued_one(self) -> None:
        self._enqueued += 1
        self._arrived.set()
        if self._queue.qsize() >= self._max_items:
            self._wake.set()

    async def put(self, item: WriteItem) -> None:
        """Queue one write, waiting while the queue is :attr:`crowded` (its headroom is for ``offer``)."""
        self._accept(item)
        while self.crowded:
            await self._wait_room(None, healthy_only=False)
        self._queue.put_nowait(item)
        self._enqueued_one()

    def put_nowait(self, item: WriteItem) -> None:
        """Queue one write now; ``WriterFullError`` when the queue is :attr:`crowded` (its headroom
        is for ``offer``: a write that may be lost must not take the room of one that cannot wait)."""
        if self.crowded:
            raise WriterFullError(f"the store writer's queue is crowded ({self._queue_max} items at most)")
        self._put_now(item)

    def _put_now(self, item: WriteItem) -> None:
        self._accept(item)
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            raise WriterFullError(f"the store writer's queue is full ({self._queue_max} items)") from None
        self._enqueued_one()

    @property
    def crowded(self) -> bool:
        """The queue is full but for its headroom (a tenth of ``queue_max``, rounded down): the room
        left is for writes that cannot wait (the bot's own sent messages, recalls), which ``offer``
        would otherwise drop; ``put`` and ``room`` wait while the queue is crowded."""
        return self._queue.qsize() >= self._crowded_at

    async def room(self, within: float) -> bool:
        """Wait until the queue is not :attr:`crowded`, at most ``within`` seconds; True when it is not.

        Returns False at once while the store fails (its writes only wait for it: a caller that must
        not wait drops its item instead) or the writer is closing or not running; and once the store
        starts failing or the writer closes during the wait. Room comes back as the loop takes the
        next batch off the queue, not when it is committed.
        """
        if self.crowded:
            await self._wait_room(within, healthy_only=True)
        return not self.crowded

    async def _wait_room(self, within: float | None, *, healthy_only: bool) -> None:
        """Wait until the queue is not crowded (or ``within`` passed; or, ``healthy_only``, the
        store fails or the writer stops)."""
        self._room_waiting += 1
        try:
            async with asyncio.timeout(within), self._room:
                await self._room.wait_for(lambda: not self.crowded or (healthy_only and not self._healthy()))
                if not self.crowded:
                    # One waiter at a time: the next is woken in a later turn of the loop, after this
                    # one has taken its room, not all of them (a dispatcher's worth) in one turn.
                    self._room.notify(1)
        except TimeoutError:
            pass
        finally:
            self._room_waiting -= 1

    def _healthy(self) -> bool:
        return self._running and not self._closing and self._failing_since is None

    async def _wake_room(self, *, everyone: bool = False) -> None:
        async with self._room:
            if everyone:
                self._room.notify_all()
            else:
                self._room.notify(1)

    def offer(self, item: WriteItem) -> bool:
        """Queue one write if there is room, never waiting. A full queue drops it: counted, logged
        (``store.writes_dropped``: how many since the last line, how many in all), ``False``."""
        try:
            self._put_now(item)
        except (WriterFullError, StoreClosedError):
            self._dropped += 1
            now = time.monotonic()
            if now - self._dropped_log_at >= DROP_LOG_INTERVAL:
                self._log_drops(kind=type(item).__name__, queue_max=self._queue_max, error=self._last_error)
                self._dropped_log_at = now
            return False
        return True

    def _log_drops(self, **detail: object) -> None:
        """One ``store.writes_dropped`` line: the drops since the last line, and all of them."""
        log.error(
            "store.writes_dropped",
            dropped=self._dropped - self._dropped_logged,
            dropped_total=self._dropped,
            **detail,
        )
        self._dropped_logged = self._dropped

    async def flush(self) -> None:
        """Commit everything queued so far now, and wait until it is written (or rejected)."""
        target = self._enqueued
        self._flush_upto = max(self._flush_upto, target)
        self._wake.set()
        async with self._progress:
            await self._progress.wait_for(lambda: self._done >= target or not self._running)
        if self._done < target:
            raise WriterError(target - self._done, "the writer is not running")

    # -- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        """The writer loop: run it in the lifespan's task group. Returns after ``aclose``."""
        self._running = True
        try:
            while True:
                if self._queue.empty():
                    if self._closing:
                        return
                    if self._room_waiting:
                        await self._wake_room(everyone=True)  # an empty queue has room for all
                    self._arrived.clear()
                    await self._arrived.wait()
                    continue
                await self._gather_window()
                batch = self._drain()
                if batch:
                    if self._room_waiting:
                        await self._wake_room()  # the first in line; each wakes the next
                    await self._commit(batch)
        except WriterError as exc:
            # Given up (closing past its deadline, or the store closed under it): aclose() reports
            # the loss; the loop ends quietly so the task group around it is not torn down.
            self._stop_error = exc
            if not self._closing:
                log.error("store.writer_stopped", unwritten=self.unwritten, error=str(exc))
        finally:
            self._running = False
            async with self._progress:
                self._progress.notify_all()

    async def _gather_window(self) -> None:
        """Let one flush interval's worth of writes arrive (or until the batch is full or flushed)."""
        self._wake.clear()
        if self._closing or self._flush_upto > self._done or self._queue.qsize() >= self._max_items:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), self._interval)

    def _drain(self) -> list[WriteItem]:
        batch: list[WriteItem] = []
        while len(batch) < self._max_items:
            try:
                batch.append(self._queue.get_nowait())
            except asyncio.QueueEmpty:
                break
        return batch

    async def _commit(self, batch: list[WriteItem]) -> None:
        self._in_flight = len(batch)
        task = asyncio.get_running_loop().create_task(self._write_with_retries(batch))
        self._commit_task = task
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not (self._abandoned and task.cancelled()) or (current is not None and current.cancelling()):
                raise
            # aclose() gave up on this commit at its deadline: nothing of the batch was applied.
            raise WriterError(self.unwritten, self._last_error or "shutdown deadline") from None
        finally:
            self._commit_task = None
            self._in_flight = 0
        async with self._progress:
            self._progress.notify_all()

    async def _write_with_retries(self, batch: Sequence[WriteItem]) -> None:
        delay = self._retry_backoff
        while True:
            started = time.perf_counter()
            try:
                await self._store.write(batch)
            except PartlyWrittenError as exc:
                # The batch made way for another write, then failed: what went in is written, the
                # rest is tried again at once (a second failure takes the paths below).
                self._failure(exc.error, len(batch) - exc.applied, 0.0)
                self._counted(exc.applied)
                batch = batch[exc.applied :]
                continue
            except StoreClosedError as exc:
                # Retrying cannot help: the store is gone. Loud, with the count of what is lost.
                self._failure(exc, len(batch), 0.0)
                raise WriterError(len(batch) + self._queue.qsize(), str(exc)) from exc
            except StoreError as exc:
                failing = self._failing_since is not None
                self._failure(exc, len(batch), delay)
                if not failing:
                    await self._wake_room(everyone=True)  # no one waits for room on a failing store
                pause = delay
                if self._closing and self._give_up_at is not None:
                    left = self._give_up_at - time.monotonic()
                    if left <= 0:
                        raise WriterError(len(batch) + self._queue.qsize(), str(exc)) from exc
                    pause = min(delay, left)  # a closing writer gives up on time, not a backoff later
                if self._closing_event.is_set():
                    await asyncio.sleep(pause)
                else:
                    # aclose() cuts a long backoff short: one more try, then backoff to the deadline.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._closing_event.wait(), pause)
                delay = min(delay * 2, self._retry_backoff_max)
                continue
            except Exception as exc:
                # Not the store's fault: some record in the batch cannot be stored. Find it.
                self._failure(exc, len(batch), 0.0)
                if len(batch) == 1:
                    self._rejected += 1
                    self._done += 1
                    log.error("store.write_rejected", item=repr(batch[0])[:300], error=repr(exc))
                    return
                half = len(batch) // 2
                await self._write_with_retries(batch[:half])
                await self._write_with_retries(batch[half:])
                return
            self._last_flush = time.perf_counter() - started
            if self._failing_since is not None:
                log.info("store.write_recovered", failures=self._failures, queued=self._queue.qsize())
                self._failing_since = None
            self._counted(len(batch))
            self._batches += 1
            self._max_batch = max(self._max_batch, len(batch))
            return

    def _counted(self, written: int) -> None:
        self._written += written
        self._done += written

    def _failure(self, exc: BaseException, size: int, retry_in: float) -> None:
        self._failures += 1
        if isinstance(exc, StoreError) and self._failing_since is None:
            self._failing_since = time.time()
        self._last_error = f"{type(exc).__name__}: {exc}"
        log.warning("store.write_failed", items=size, error=self._last_error, retry_in=retry_in)

    # -- lifecycle ------------------------------------------------------------------------------

    async def aclose(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 (a budget, kept whole)
        """Refuse new writes, commit what is queued, stop the loop (idempotent).

        Gives up ``timeout`` seconds from now (default: ``close_timeout``): what is still unwritten
        then is logged as ``store.writes_lost`` (count and reason) and ``WriterError`` is raised."""
        if self._closed:
            return
        budget = self._close_timeout if timeout is None else max(0.0, timeout)
        self._closing = True
        self._closing_event.set()
        self._give_up_at = time.monotonic() + budget
        self._wake.set()
        self._arrived.set()
        await self._wake_room(everyone=True)  # no one waits for room in a closing writer
        if self._dropped > self._dropped_logged:  # the drops since the last line, so the log has all
            self._log_drops()
        failure: WriterError | None = None
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wait_stopped(), budget)
            if self._running or (self._task is not None and not self._task.done()):
                # The store kept refusing, or one commit is stuck inside SQLite: abandon it.
                self._abandoned = True
                if self._commit_task is not None:
                    self._commit_task.cancel()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wait_stopped(), ABANDON_WAIT)
        except WriterError as exc:
            failure = exc
        finally:
            self._closed = True
            self._task = None
        lost = self.unwritten
        if lost:
            failure = WriterError(
                lost, self._last_error or str(failure or self._stop_error or "stopped early")
            )
        if failure is not None:
            log.error(
                "store.writes_lost",
                lost=failure.unwritten,
                written=self._written,
                dropped=self._dropped,
                reason=self._last_error or str(failure),
            )
            raise failure

    @property
    def unwritten(self) -> int:
        """Items accepted and neither written nor rejected (queued, or in a commit not yet done)."""
        return self._enqueued - self._done

    async def _wait_stopped(self) -> None:
        if self._task is not None:
            await asyncio.shield(self._task)
        elif self._running:
            async with self._progress:
                await self._progress.wait_for(lambda: not self._running)
        elif not self._queue.empty():
            # Never started (or already stopped): write what is left here.
            await self.run()

    async def __aenter__(self) -> StoreWriter:
        self._running = True  # so flush() right away waits for the loop instead of failing
        self._task = asyncio.get_running_loop().create_task(self.run(), name="greywind-store-writer")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def progress(self) -> tuple[int, int, int]:
        """Writes handed to the writer, those done (committed, or rejected and logged) and those it
        dropped: what the inbound journal asks for every message, without a whole statistics record."""
        return self._enqueued, self._written + self._rejected, self._dropped

    def statistics(self) -> WriterStatistics:
        return WriterStatistics(
            queued=self._queue.qsize(),
            queue_max=self._queue_max,
            in_flight=self._in_flight,
            enqueued=self._enqueued,
            written=self._written,
            batches=self._batches,
            failures=self._failures,
            rejected=self._rejected,
            dropped=self._dropped,
            max_batch=self._max_batch,
            last_flush_seconds=self._last_flush,
            last_error=self._last_error,
            failing_since=self._failing_since,
            running=self._running,
            closed=self._closed,
        )
