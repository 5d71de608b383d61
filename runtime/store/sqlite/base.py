"""The connection owner shared by the SQLite store's table groups: one aiosqlite connection, one lock.

All statements go through :meth:`SqliteBase._rows` (reads) and :meth:`SqliteBase._tx` (writes). One
asyncio lock serialises them, because a transaction spans several awaits on the single connection
and nothing else may slip into it. Writes run as ``BEGIN IMMEDIATE ... COMMIT`` with lock retries;
any other SQLite failure rolls back and raises ``StoreWriteError`` (the caller may retry the whole).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import aiosqlite
import structlog

from runtime.config.store import StoreConfig
from runtime.store.errors import StoreClosedError, StoreLockedError, StoreWriteError
from runtime.store.sqlite.schema import retrying

log = structlog.get_logger("greywind.store")

Body = Callable[[aiosqlite.Connection], Awaitable[None]]


def placeholders(values: Collection[object]) -> str:
    return ", ".join("?" * len(values))


def upsert_sql(table: str, columns: str, key: str) -> str:
    """``INSERT ... ON CONFLICT(key) DO UPDATE`` replacing every non-key column (rowids stay stable)."""
    cols = [c.strip() for c in columns.split(",")]
    keys = {k.strip() for k in key.split(",")}
    updates = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in keys)
    return (
        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({placeholders(cols)}) "
        f"ON CONFLICT ({key}) DO UPDATE SET {updates}"
    )


class SqliteBase:
    def __init__(self, db: aiosqlite.Connection, path: Path, config: StoreConfig, version: int) -> None:
        self._db = db
        self._path = path
        self._config = config
        self._version = version
        self._lock = asyncio.Lock()
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
        async with self._lock:
            try:
                # Fold the WAL back into the main file so a copied database file is complete.
                await self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                log.warning("store.checkpoint_failed", path=str(self._path), error=str(exc))
            finally:
                await self._db.close()

    async def _retry(self, what: str, op: Callable[[], Awaitable[Any]]) -> Any:
        return await retrying(
            what, op, retries=self._config.lock_retries, backoff=self._config.lock_backoff_ms / 1000
        )

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        self._check()

        async def attempt() -> list[Any]:
            async with self._db.execute(sql, params) as cur:
                return list(await cur.fetchall())

        async with self._lock:
            result: list[Any] = await self._retry("read", attempt)
            return result

    async def _one(self, sql: str, params: Sequence[Any] = ()) -> Any | None:
        rows = await self._rows(sql, params)
        return rows[0] if rows else None

    async def _tx(self, what: str, body: Body) -> None:
        """Run ``body`` inside one ``BEGIN IMMEDIATE`` transaction: all of it or none of it."""
        self._check()
        db = self._db

        async def attempt() -> None:
            await db.execute("BEGIN IMMEDIATE")
            try:
                await body(db)
                await db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    await db.execute("ROLLBACK")
                raise

        async with self._lock:
            try:
                await self._retry(what, attempt)
            except StoreLockedError:
                self._failures += 1
                raise
            except sqlite3.Error as exc:
                self._failures += 1
                raise StoreWriteError(f"{what} failed on {self._path}: {exc}") from exc

    async def _execute(self, what: str, sql: str, params: Sequence[Any] = ()) -> int:
        """One write statement in its own transaction; returns the changed row count."""
        changed = 0

        async def body(db: aiosqlite.Connection) -> None:
            nonlocal changed
            cur = await db.execute(sql, params)
            changed = cur.rowcount
            await cur.close()

        await self._tx(what, body)
        return changed

    async def _executemany(self, what: str, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            self._check()
            return

        async def body(db: aiosqlite.Connection) -> None:
            await db.executemany(sql, rows)

        await self._tx(what, body)
