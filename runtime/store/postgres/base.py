"""The connection pool shared by the PostgreSQL store's table groups, and how a statement runs on it.

Statements are written with SQLite's ``?`` placeholders (the column lists and upserts are shared with
the SQLite backend, :mod:`runtime.store.sql`); :func:`pg` numbers them ``$1, $2...``. Reads
go through :meth:`PostgresBase._rows`, writes through :meth:`PostgresBase._tx`: one transaction on a
pooled connection, all of it or none of it. PostgreSQL lets writes run side by side, so unlike
SQLite no process-wide write lock is needed; a write still waits at most ``[store] write_wait_ms``
for a connection and for a row lock (the connections' ``lock_timeout``), then raises
``StoreLockedError``. Any other failure rolls back and raises ``StoreWriteError``; a read that fails
raises ``StoreReadError``.

Text reaching the server loses the one character PostgreSQL cannot store, U+0000 (it becomes
U+FFFD), as a lone surrogate does on both backends (``StoredMessage.encodable``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from functools import lru_cache
from typing import Any

import asyncpg
import structlog

from runtime.config.store import StoreConfig
from runtime.store.errors import (
    StoreClosedError,
    StoreLeaseError,
    StoreLockedError,
    StoreReadError,
    StoreWriteError,
)
from runtime.store.sql.base import SqlBase

log = structlog.get_logger("greywind.store")

Body = Callable[[asyncpg.Connection], Awaitable[None]]


@lru_cache(maxsize=512)
def pg(sql: str) -> str:
    """``?`` placeholders numbered as PostgreSQL's ``$n`` (the statements hold no literal ``?``)."""
    counter = iter(range(1, 10_000))
    return re.sub(r"\?", lambda _: f"${next(counter)}", sql)


def clean(value: Any) -> Any:
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def cleaned(values: Sequence[Any]) -> list[Any]:
    return [clean(v) for v in values]


class PostgresBase(SqlBase):
    def __init__(self, pool: asyncpg.Pool, where: str, config: StoreConfig, version: int) -> None:
        self._pool = pool
        self._where = where
        self._config = config
        self._version = version
        self._closed = False
        self._batches = 0
        self._items = 0
        self._failures = 0
        self._message_count = 0
        self._lease_problem: str | None = None

    @property
    def where(self) -> str:
        """The server and database (the DSN without its password), for logs and errors."""
        return self._where

    @property
    def schema_version(self) -> int:
        return self._version

    def _check(self) -> None:
        if self._closed:
            raise StoreClosedError(f"the store at {self._where} is closed")

    @property
    def _wait(self) -> float:
        return self._config.write_wait_ms / 1000

    async def _rows(self, sql: str, values: Sequence[Any] = ()) -> list[Any]:
        self._check()
        try:
            async with self._pool.acquire(timeout=max(self._wait, 5.0)) as connection:
                return list(await connection.fetch(pg(sql), *cleaned(values)))
        except (TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise StoreReadError(f"read failed on {self._where}: {exc}") from exc

    async def _tx(self, what: str, body: Body) -> None:
        """Run ``body`` in one transaction: all of it or none of it, within ``write_wait_ms``."""
        self._check()
        if self._lease_problem is not None:
            self._failures += 1
            raise StoreLeaseError(f"{what}: {self._lease_problem}")
        wait = self._wait
        try:
            async with self._pool.acquire(timeout=wait) as connection, connection.transaction():
                await body(connection)
        except TimeoutError as exc:
            self._failures += 1
            raise StoreLockedError(
                f"{what}: no connection to {self._where} came free within {wait:g}s"
            ) from exc
        except asyncpg.LockNotAvailableError as exc:
            self._failures += 1
            raise StoreLockedError(f"{what}: a row stayed locked by another connection ({exc})") from exc
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            self._failures += 1
            raise StoreWriteError(f"{what} failed on {self._where}: {exc}") from exc

    async def _execute(self, what: str, sql: str, values: Sequence[Any] = ()) -> int:
        """One write statement in its own transaction; returns the changed row count."""
        changed = 0

        async def body(connection: asyncpg.Connection) -> None:
            nonlocal changed
            status = await connection.execute(pg(sql), *cleaned(values))
            changed = _row_count(status)

        await self._tx(what, body)
        return changed

    async def _executemany(self, what: str, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            self._check()
            return

        async def body(connection: asyncpg.Connection) -> None:
            await connection.executemany(pg(sql), [cleaned(r) for r in rows])

        await self._tx(what, body)


def _row_count(status: str) -> int:
    """The row count of a command tag (``DELETE 3``, ``INSERT 0 1``, ``UPDATE 2``)."""
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0
