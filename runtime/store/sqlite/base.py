"""The connections shared by the SQLite store's table groups: one for writes, one for reads.

All statements go through :meth:`SqliteBase._rows` (reads) and :meth:`SqliteBase._tx` (writes).
Writes share one connection and one asyncio lock, because a transaction spans several awaits on it
and nothing else may slip into it. They run as ``BEGIN IMMEDIATE ... COMMIT``; any SQLite failure
other than a lock rolls back and raises ``StoreWriteError`` (the caller may retry the whole).

Reads have a connection of their own (WAL: a reader never waits for a writer), so building a reply's
context never queues behind a write that is stuck on a full disk or on another process's lock.

Both connections are taken in turn through an :class:`~runtime.store.addressed_first.AddressedFirstLock`:
an @ on its way to the model waits for the statement running, not for the queue. Its reads have a
second read connection besides, which only addressed work uses: they never wait for another chat's
search or the memory layer's long reads. They go straight into that connection's queue, with no lock
(its thread runs them in order), so a context's parts read back to back there instead of one per turn
of the event loop; when reads are queued there and the shared reader is free, one goes there. A transaction of
plain statements (:meth:`SqliteBase._tx_in_thread`: the writer's batches, single upserts, an episode's
save) is one trip to the connection's thread, ``BEGIN`` to ``COMMIT``: while the event loop is busy each
trip waits for its turn there, and the write lock was held across six of them. Such a transaction
holds the write lock only while it is queued on that thread (which runs what it is given in order):
the lock orders the writes, the thread runs them back to back. Held until the loop had taken each
result, writes queued behind one another went at one or two turns of a busy loop each, and under a
flood the twentieth waited a second, whatever SQLite needed. A long one (the writer's batch) commits
early when another write waits (:meth:`SqliteBase._wanted`), and the rest follows.

A write waits at most ``[store] write_wait_ms`` for the database (this process's other writes and
another connection's lock together), then raises ``StoreLockedError``. The writer task retries its
batches with backoff; every other write fails fast, and the reply path carries on without it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import structlog

from runtime.config.store import StoreConfig
from runtime.store.addressed_first import AddressedFirstLock
from runtime.store.errors import StoreClosedError, StoreLockedError, StoreWriteError
from runtime.store.sql.base import SqlBase
from runtime.store.sqlite.schema import is_locked_error, retrying
from runtime.urgency import in_addressed_work

log = structlog.get_logger("greywind.store")

Body = Callable[[aiosqlite.Connection], Awaitable[None]]
T = TypeVar("T")


async def _acquire_within(lock: AddressedFirstLock, seconds: float) -> bool:
    """Take ``lock`` if it comes free within ``seconds``; never leaves it taken on failure or cancel."""
    if not lock.locked():
        await lock.acquire()
        return True
    waiter = asyncio.ensure_future(lock.acquire())

    def give_back(done: asyncio.Future[Any]) -> None:
        # Granted after all (the timeout and the wake-up crossed): nobody holds it, release it.
        if not done.cancelled() and done.exception() is None:
            lock.release()

    try:
        finished, _ = await asyncio.wait({waiter}, timeout=seconds)
    except BaseException:
        waiter.cancel()
        waiter.add_done_callback(give_back)
        raise
    if finished:
        return True
    waiter.cancel()
    waiter.add_done_callback(give_back)
    return False


class SqliteBase(SqlBase):
    def __init__(
        self,
        db: aiosqlite.Connection,
        path: Path,
        config: StoreConfig,
        version: int,
        reader: aiosqlite.Connection | None = None,
        addressed_reader: aiosqlite.Connection | None = None,
    ) -> None:
        self._db = db
        self._reader = reader or db
        self._addressed_reader = addressed_reader
        self._path = path
        self._config = config
        self._version = version
        self._lock = AddressedFirstLock()
        self._read_lock = AddressedFirstLock() if reader is not None else self._lock
        self._addressed_reads = 0  # addressed reads queued on their own connection, not yet answered
        self._busy_ms = config.busy_timeout_ms
        self._locked_by: str | None = None  # the last write's lock error, until a write commits
        self._closed = False
        self._batches = 0
        self._items = 0
        self._failures = 0
        self._message_count = 0

    @property
    def path(self) -> Path:
        return self._path

    @property
    def schema_version(self) -> int:
        return self._version

    def _check(self) -> None:
        if self._closed:
            raise StoreClosedError(f"the store at {self._path} is closed")

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            async with self._lock:
                try:
                    # Fold the WAL back into the main file so a copied database file is complete; a
                    # database another process keeps locked must not hold the shutdown for long.
                    await self._db.execute(f"PRAGMA busy_timeout = {int(self._config.write_wait_ms)}")
                    await self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error as exc:
                    log.warning("store.checkpoint_failed", path=str(self._path), error=str(exc))
                finally:
                    if self._addressed_reader is not None:
                        # Queued behind the reads already queued there: they are answered first.
                        await self._addressed_reader.close()
                    if self._reader is not self._db:
                        async with self._read_lock:
                            await self._reader.close()
                    await self._db.close()
        except BaseException:
            # Cut short (the shutdown's deadline passed, say behind a write waiting on a lock): the
            # connections' threads must not keep the process alive. Each closes its connection and
            # ends once the statement it is running returns.
            for connection in {id(c): c for c in self._connections()}.values():
                connection.stop()
            raise

    def _connections(self) -> list[aiosqlite.Connection]:
        extra = [self._addressed_reader] if self._addressed_reader is not None else []
        return [self._db, self._reader, *extra]

    async def _retry(self, what: str, op: Callable[[], Awaitable[Any]]) -> Any:
        return await retrying(
            what, op, retries=self._config.lock_retries, backoff=self._config.lock_backoff_ms / 1000
        )

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        self._check()
        second = self._addressed_reader
        # Addressed work reads on its own connection, unless that has reads queued and the shared
        # one is free.
        if (
            second is not None
            and in_addressed_work()
            and (self._addressed_reads == 0 or self._read_lock.locked())
        ):
            # Straight into the queue of that connection's thread, which runs what it is given in
            # order: the reads of one context build go back to back there, each answered as it is
            # done, not one per turn of the event loop as a lock handing the connection on would let
            # them. Only addressed work queues there, so nothing else's long read stands in the way.
            self._addressed_reads += 1
            try:
                return await self._fetch(second, sql, params)
            finally:
                self._addressed_reads -= 1
        async with self._read_lock:
            return await self._fetch(self._reader, sql, params)

    async def _fetch(self, reader: aiosqlite.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
        """One trip to ``reader``'s thread (execute, fetch and close there, not three), retried while
        another connection holds the database."""

        async def attempt() -> list[Any]:
            return list(await reader.execute_fetchall(sql, params))

        result: list[Any] = await self._retry("read", attempt)
        return result

    async def _tx(self, what: str, body: Body) -> None:
        """Run ``body`` inside one ``BEGIN IMMEDIATE`` transaction: all of it or none of it, within
        ``write_wait_ms`` (else ``StoreLockedError``)."""
        db = self._db

        async def attempt(busy: int) -> None:
            if busy != self._busy_ms:
                await db.execute(f"PRAGMA busy_timeout = {busy}")
                self._busy_ms = busy
            await db.execute("BEGIN IMMEDIATE")
            try:
                await body(db)
                await db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    await db.execute("ROLLBACK")
                raise

        await self._locked_write(what, attempt)

    async def _tx_in_thread(self, what: str, work: Callable[[sqlite3.Connection], T]) -> T:
        """Like :meth:`_tx` for a body of plain statements, ``work`` (run on the write connection's
        thread): the whole transaction is one trip there."""
        db = self._db

        def transaction(connection: sqlite3.Connection, busy: int) -> T:
            if busy != self._busy_ms:
                connection.execute(f"PRAGMA busy_timeout = {busy}")
                self._busy_ms = busy
            connection.execute("BEGIN IMMEDIATE")
            try:
                result = work(connection)
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            return result

        def queue(busy: int) -> asyncio.Future[T]:
            # aiosqlite's connection runs the functions put in its queue, ``_tx``, one after another
            # on its thread (what its own methods do); ``_conn`` is its sqlite3 connection, used only
            # there. Queued under the lock, which is free again at once: the transaction runs after
            # what was queued before it and before what is queued after, as if the lock were held.
            if not db._running or db._connection is None:
                raise StoreClosedError(f"the store at {self._path} is closed")
            future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
            db._tx.put_nowait((future, lambda: transaction(db._conn, busy)))
            return future

        self._check()
        deadline = time.monotonic() + self._config.write_wait_ms / 1000

        async def attempt(busy: int) -> T:
            await self._take_turn(what, deadline)
            try:
                queued = queue(busy)
            finally:
                self._lock.release()
            return await queued

        result: T = await self._counted(what, self._attempts(what, attempt, deadline))
        return result

    def _wanted(self) -> bool:
        """Another write waits for the write connection: for the lock, or queued on its thread (a
        long transaction running there asks between its statements, and commits early)."""
        return self._lock.wanted() or not self._db._tx.empty()

    async def _take_turn(self, what: str, deadline: float) -> None:
        """The write lock, if it comes free by ``deadline`` (else ``StoreLockedError``)."""
        if not await _acquire_within(self._lock, max(0.0, deadline - time.monotonic())):
            # Why that write held it so long, when it was the database's lock: the reason in the end.
            why = f" ({self._locked_by})" if self._locked_by else ""
            raise StoreLockedError(
                f"{what}: another write of this process held the database for "
                f"{self._config.write_wait_ms / 1000:g}s{why}"
            ) from None

    async def _locked_write(self, what: str, attempt: Callable[[int], Awaitable[T]]) -> T:
        """One transaction (``attempt(busy_timeout_ms)``) under the write lock, retried while another
        connection holds the database, all within ``write_wait_ms`` (else ``StoreLockedError``)."""
        self._check()
        deadline = time.monotonic() + self._config.write_wait_ms / 1000
        await self._counted(what, self._take_turn(what, deadline))
        try:
            result: T = await self._counted(what, self._attempts(what, attempt, deadline))
            return result
        finally:
            self._lock.release()

    async def _counted(self, what: str, work: Awaitable[T]) -> T:
        """``work``, its failures counted; SQLite's raised as ``StoreWriteError``."""
        try:
            return await work
        except StoreLockedError:
            self._failures += 1
            raise
        except sqlite3.Error as exc:
            self._failures += 1
            raise StoreWriteError(f"{what} failed on {self._path}: {exc}") from exc

    async def _attempts(self, what: str, attempt: Callable[[int], Awaitable[T]], deadline: float) -> T:
        backoff = self._config.lock_backoff_ms / 1000
        for tried in range(self._config.lock_retries + 1):
            left_ms = int((deadline - time.monotonic()) * 1000)
            try:
                result = await attempt(max(1, min(self._config.busy_timeout_ms, left_ms)))
            except sqlite3.OperationalError as exc:
                if not is_locked_error(exc):
                    raise
                self._locked_by = f"locked by another connection: {exc}"
                if tried == self._config.lock_retries or time.monotonic() + backoff >= deadline:
                    raise StoreLockedError(
                        f"{what}: the database stayed locked by another connection "
                        f"through {tried + 1} attempt(s) ({exc})"
                    ) from exc
                await asyncio.sleep(backoff)
                backoff *= 2
            else:
                self._locked_by = None
                return result
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _execute(self, what: str, sql: str, params: Sequence[Any] = ()) -> int:
        """One write statement in its own transaction; returns the changed row count."""

        def statement(connection: sqlite3.Connection) -> int:
            cursor = connection.execute(sql, params)
            try:
                return cursor.rowcount
            finally:
                cursor.close()

        changed: int = await self._tx_in_thread(what, statement)
        return changed

    async def _executemany(self, what: str, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            self._check()
            return

        await self._tx_in_thread(what, lambda connection: connection.executemany(sql, rows).close())
