"""Opening the database file: data dir checks, corruption check, pragmas, numbered migrations.

Migrations are ``migrations/NNNN_name.sql``, applied in order at start, each in its own transaction
together with its row in ``schema_version``. A database whose version is newer than the newest script
is refused (``SchemaTooNewError``) before anything is written to it. A file that is not an SQLite
database, or fails ``PRAGMA quick_check``, is refused (``StoreCorruptError``) and left untouched.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import aiosqlite

from runtime.store.errors import (
    DataDirError,
    MigrationError,
    SchemaTooNewError,
    StoreCorruptError,
    StoreLockedError,
)
from runtime.store.sql.migrations import Migration
from runtime.store.sql.migrations import load_migrations as load_package_migrations

DB_FILENAME = "greywind.sqlite3"
_SQLITE_MAGIC = b"SQLite format 3\x00"
T = TypeVar("T")


def load_migrations() -> list[Migration]:
    """The shipped migration scripts, in version order (see :mod:`runtime.store.sql.migrations`)."""
    return load_package_migrations("runtime.store.sqlite")


LATEST_VERSION = len(load_migrations())


def ensure_data_dir(path: Path) -> Path:
    """Create the data directory if missing; refuse one that cannot be created or written."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataDirError(str(path), f"cannot be created ({exc.strerror or exc})") from exc
    if not path.is_dir():
        raise DataDirError(str(path), "is not a directory")
    probe = path / f".greywind-write-probe-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise DataDirError(str(path), f"is not writable ({exc.strerror or exc})") from exc
    return path


def check_file_header(path: Path) -> None:
    """Refuse a non-empty file that does not start with SQLite's magic header."""
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreCorruptError(str(path), f"cannot be read ({exc})") from exc
    if head and head != _SQLITE_MAGIC:
        raise StoreCorruptError(str(path), "not an SQLite database (bad header)")


def is_locked_error(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return "locked" in text or "busy" in text


async def retrying(what: str, op: Callable[[], Awaitable[T]], *, retries: int, backoff: float) -> T:
    """Run ``op()`` again while the database is locked; ``StoreLockedError`` after the last try.

    SQLite's own busy timeout already waited inside each attempt; these retries cover a lock held
    longer than that (a backup, another process's long transaction).
    """
    delay = backoff
    for attempt in range(retries + 1):
        try:
            return await op()
        except sqlite3.OperationalError as exc:
            if not is_locked_error(exc):
                raise
            if attempt == retries:
                raise StoreLockedError(
                    f"{what}: the database stayed locked by another connection "
                    f"through {retries + 1} attempt(s) ({exc})"
                ) from exc
            await asyncio.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")  # pragma: no cover


async def configure(db: aiosqlite.Connection, path: Path, *, busy_timeout_ms: int, quick_check: bool) -> None:
    """Pragmas (WAL, synchronous=NORMAL, busy timeout, foreign keys) and the corruption check."""
    try:
        await db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        async with db.execute("PRAGMA journal_mode = WAL") as cur:
            row = await cur.fetchone()
        await db.execute("PRAGMA synchronous = NORMAL")
        await db.execute("PRAGMA foreign_keys = ON")
        if quick_check:
            async with db.execute("PRAGMA quick_check") as cur:
                rows = await cur.fetchall()
            verdict = "; ".join(str(r[0]) for r in rows)
            if verdict != "ok":
                raise StoreCorruptError(str(path), f"quick_check: {verdict[:300]}")
    except sqlite3.DatabaseError as exc:
        if is_locked_error(exc):
            raise
        raise StoreCorruptError(str(path), str(exc)) from exc
    # A real file must be in WAL for the durability bound (in-memory databases answer "memory").
    if row is not None and str(row[0]).lower() != "wal" and str(path) != ":memory:":
        raise StoreCorruptError(str(path), f"could not switch to WAL (journal_mode={row[0]})")


async def schema_version(db: aiosqlite.Connection) -> int:
    await db.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at REAL NOT NULL)"
    )
    async with db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def migrate(db: aiosqlite.Connection, path: Path) -> int:
    """Apply every pending migration; returns the version the database is at afterwards."""
    migrations = load_migrations()
    current = await schema_version(db)
    known = migrations[-1].version if migrations else 0
    if current > known:
        raise SchemaTooNewError(str(path), current, known)
    for mig in migrations:
        if mig.version <= current:
            continue
        stamp = (
            f"INSERT INTO schema_version (version, name, applied_at) "
            f"VALUES ({mig.version}, '{mig.name}', {time.time()!r});"
        )
        try:
            # executescript runs the script as written: our BEGIN/COMMIT make it one transaction.
            await db.executescript(f"BEGIN IMMEDIATE;\n{mig.sql}\n{stamp}\nCOMMIT;")
        except sqlite3.Error as exc:
            if db.in_transaction:
                await db.execute("ROLLBACK")
            if is_locked_error(exc):
                raise
            raise MigrationError(mig.version, str(exc)) from exc
        current = mig.version
    return current
