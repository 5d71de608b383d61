"""Measures of work that do not depend on the machine's speed, for tests of what grows with what.

:func:`vm_steps` counts the virtual-machine steps SQLite takes for one statement (a progress handler
called every 100 of them), so a test can say whether a query's work grows with rows it should not
read. :func:`busy_loop` makes every turn of the running event loop take ``turn`` seconds (the rest of
a loaded process's work) and counts the turns, so a test can say how many turns something waited.
:func:`database_before` builds a database file as an older version of the bot left it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from runtime.store.sqlite.schema import Migration, load_migrations


def vm_steps(path: Path, sql: str, params: Sequence[Any]) -> tuple[int, list[Any]]:
    """Run ``sql`` on the database at ``path``: its steps (in hundreds) and its rows."""
    db = sqlite3.connect(path)
    steps = 0

    def tick() -> int:
        nonlocal steps
        steps += 1
        return 0

    try:
        db.set_progress_handler(tick, 100)
        rows = db.execute(sql, params).fetchall()
    finally:
        db.close()
    return steps, rows


class Turns:
    """How many turns of the loop have gone by."""

    def __init__(self) -> None:
        self.count = 0


@contextlib.asynccontextmanager
async def busy_loop(turn: float) -> AsyncIterator[Turns]:
    turns = Turns()

    async def busy() -> None:
        while True:
            time.sleep(turn)  # noqa: ASYNC251 - the rest of the process's work in this turn of the loop
            turns.count += 1
            await asyncio.sleep(0)

    hog = asyncio.create_task(busy())
    try:
        await asyncio.sleep(0)
        yield turns
    finally:
        hog.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await hog


def database_before(conn: sqlite3.Connection, before: Callable[[Migration], bool]) -> list[Migration]:
    """Make ``conn``'s database as the bot left it before the first migration ``before`` picks: the
    migrations ahead of that one applied and recorded. Returns them."""
    older = list(itertools.takewhile(lambda migration: not before(migration), load_migrations()))
    conn.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at REAL NOT NULL)"
    )
    for migration in older:
        conn.executescript(migration.sql)
        conn.execute("INSERT INTO schema_version VALUES (?, ?, 0)", (migration.version, migration.name))
    return older
