"""Store backends for the benchmarks by name: ``sqlite`` (a fresh file), ``memory``, ``postgresql``.

``postgresql`` uses the database ``$GREYWIND_PG_DSN`` names when it is set (it should be empty: the
benchmarks fill it), else a throwaway server started for the run (``tests/support/postgres_server.py``,
the one the tests use) and removed afterwards.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from runtime.store.memory import MemoryStore
from runtime.store.protocol import Store
from runtime.store.sqlite import DB_FILENAME, SqliteStore

NAMES = ("sqlite", "postgresql", "memory")


@contextlib.contextmanager
def postgres_database(name: str) -> Iterator[str]:
    """A DSN: ``$GREYWIND_PG_DSN``, or a fresh database on a throwaway server."""
    given = os.environ.get("GREYWIND_PG_DSN")
    if given:
        yield given
        return
    from tests.support.postgres_server import PostgresCluster

    cluster = PostgresCluster().start()
    try:
        yield cluster.fresh_database(name)
    finally:
        cluster.stop()


@contextlib.asynccontextmanager
async def bench_store(name: str, directory: Path, *, path: Path | None = None) -> AsyncIterator[Store]:
    """An open store of backend ``name`` (SQLite: ``path`` or a file in ``directory``), closed after."""
    if name == "memory":
        store: Store = MemoryStore()
    elif name == "sqlite":
        store = await SqliteStore.open(path or directory / DB_FILENAME)
    elif name == "postgresql":
        with postgres_database("bench") as dsn:
            from runtime.store.postgres import PostgresStore

            store = await PostgresStore.open(dsn)
            try:
                yield store
            finally:
                await store.close()
        return
    else:
        raise ValueError(f"unknown backend {name!r} (known: {', '.join(NAMES)})")
    try:
        yield store
    finally:
        await store.close()
