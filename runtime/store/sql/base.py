"""What the shared table methods ask of a backend: run a read, run a write, say whether it is open;
and what every backend counts and lists the same way (its statistics, its tables' row counts).

:class:`~runtime.store.sqlite.base.SqliteBase` and :class:`~runtime.store.postgres.base.PostgresBase`
implement it (their connections, locks, retries and errors); the table groups of :mod:`runtime.store.sql`
are written against it alone.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from runtime.store.roles import StoreStatistics


class SqlBase(ABC):
    backend: ClassVar[str]
    """The backend's name in ``[store] backend``."""
    tables_sql: ClassVar[str]
    """The names of the store's tables, one a row, sorted (full-text index tables left out)."""
    # Kept by the backend since the store was opened (see StoreStatistics).
    _message_count: int
    _batches: int
    _items: int
    _failures: int
    _version: int

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

    def statistics(self) -> StoreStatistics:
        return StoreStatistics(
            backend=self.backend,
            messages=self._message_count,
            batches_written=self._batches,
            items_written=self._items,
            write_failures=self._failures,
            schema_version=self._version,
        )

    async def table_counts(self) -> dict[str, int]:
        """Rows per table, for the admin status, the CLI and the migration's check."""
        counts = {}
        for (name,) in await self._rows(self.tables_sql):
            row = await self._one(f'SELECT COUNT(*) FROM "{name}"')
            counts[str(name)] = int(row[0]) if row else 0
        return counts
