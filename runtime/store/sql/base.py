"""What the shared table methods ask of a backend: run a read, run a write, say whether it is open.

:class:`~runtime.store.sqlite.base.SqliteBase` and :class:`~runtime.store.postgres.base.PostgresBase`
implement it (their connections, locks, retries and errors); the table groups of :mod:`runtime.store.sql`
are written against it alone.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any


class SqlBase(ABC):
    @abstractmethod
    def _check(self) -> None:
        """Raise ``StoreClosedError`` once the store is closed."""

    @abstractmethod
    async def _rows(self, sql: str, params: Sequence[Any] = (), /) -> list[Any]:
        """The rows of one read (``StoreReadError`` when it fails)."""

    @abstractmethod
    async def _execute(self, what: str, sql: str, params: Sequence[Any] = (), /) -> int:
        """One write statement in its own transaction; the changed row count."""

    @abstractmethod
    async def _executemany(self, what: str, sql: str, rows: Sequence[Sequence[Any]], /) -> None:
        """One statement over ``rows``, all in one transaction."""

    async def _one(self, sql: str, params: Sequence[Any] = (), /) -> Any | None:
        """The first row of a read, or ``None``."""
        rows = await self._rows(sql, params)
        return rows[0] if rows else None
