"""An SQLite database copied into an empty PostgreSQL one: ``python -m runtime.store migrate``.

The PostgreSQL schema mirrors SQLite's column for column, so the copy is table by table: every row
as it is, the full-text columns turned from SQLite's token text into the same tsvectors the store
writes (:func:`runtime.store.postgres.search.tsvector` over the same jieba tokens), the identity
sequences moved past the copied ``seq`` values. It runs in one transaction (all or nothing) while
holding the whole database's lease (``*``), so no bot can be writing there meanwhile; a target that
already holds rows is refused. Afterwards every table's row count is compared with the source's.

``account``: the copy goes into that listed account's own schema (``greywind_<qq id>``, where its
runtime stack keeps its tables, :func:`~runtime.store.postgres.schema.account_schema`) and holds
only that account's lease, so the processes serving other accounts of the database keep running.
Its source is the account's data directory, ``<data dir>/accounts/<qq id>/``.

The SQLite file is opened as the bot opens it first (integrity check, its migrations applied), then
read through a read-only connection: it is never changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite
import asyncpg

from runtime.config.store import StoreConfig
from runtime.store.errors import StoreError
from runtime.store.postgres.base import cleaned
from runtime.store.postgres.schema import account_schema
from runtime.store.postgres.search import tsvector
from runtime.store.postgres.store import PostgresStore
from runtime.store.sqlite import SqliteStore

__all__ = ["COPIED_TABLES", "CopyReport", "copy_sqlite"]

#: The tables copied, parents before children (memory_vectors refers to memories).
COPIED_TABLES = (
    "messages",
    "events",
    "scheduled_activations",
    "speech_log",
    "lexicon_terms",
    "threads",
    "sessions",
    "handoffs",
    "tasks",
    "memories",
    "memory_vectors",
    "memory_summaries",
    "token_usage",
    "user_profiles",
    "episodes",
    "episode_steps",
    "tool_calls",
    "transcripts",
)
_TEXT_SEARCH_COLUMNS = frozenset({"words", "chars"})
_BATCH = 2_000


@dataclass(slots=True)
class CopyReport:
    """Rows per table in the source and in the target after the copy; ``unbound``: chats without
    their account (bind them in SQLite first: ``python -m runtime.store rebind``)."""

    source: dict[str, int] = field(default_factory=dict)
    target: dict[str, int] = field(default_factory=dict)
    unbound: list[str] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return all(self.target.get(table) == count for table, count in self.source.items())


async def _columns(connection: asyncpg.Connection, table: str) -> list[tuple[str, str]]:
    rows = await connection.fetch(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
        table,
    )
    return [(str(r[0]), str(r[1])) for r in rows]


def _converter(kind: str, column: str) -> Callable[[Any], Any]:
    if column in _TEXT_SEARCH_COLUMNS and kind == "tsvector":
        return lambda value: tsvector(value or "")
    if kind == "bytea":
        return lambda value: None if value is None else bytes(value)
    return lambda value: value


async def _copy_table(source: aiosqlite.Connection, target: asyncpg.Connection, table: str) -> None:
    columns = await _columns(target, table)
    names = [name for name, _ in columns]
    convert = [_converter(kind, name) for name, kind in columns]
    casts = ", ".join(f"${i}::{_pg_type(kind)}" for i, (_, kind) in enumerate(columns, 1))
    insert = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({casts})"
    async with source.execute(f"SELECT {', '.join(names)} FROM {table}") as cursor:
        while batch := await cursor.fetchmany(_BATCH):
            rows = [cleaned([c(v) for c, v in zip(convert, row, strict=True)]) for row in batch]
            await target.executemany(insert, rows)
    if "seq" in names:
        await target.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'seq'), COALESCE(MAX(seq), 0) + 1, false) "
            f"FROM {table}"
        )


def _pg_type(kind: str) -> str:
    return {"double precision": "float8", "bigint": "int8", "text": "text", "bytea": "bytea"}.get(kind, kind)


async def copy_sqlite(
    path: Path, dsn: str, *, config: StoreConfig | None = None, account: str | None = None
) -> CopyReport:
    """Copy the SQLite database at ``path`` into the (empty) PostgreSQL database at ``dsn``; into the
    schema of ``account`` when one is given (``ValueError`` when it is not a QQ number)."""
    config = config or StoreConfig()
    schema = account_schema(account) if account is not None else None
    report = CopyReport()
    sqlite = await SqliteStore.open(path, config=config)  # checked and migrated as the bot would
    try:
        counts = await sqlite.table_counts()
        report.unbound = await sqlite.unbound_chats()
    finally:
        await sqlite.close()
    report.source = {table: counts.get(table, 0) for table in COPIED_TABLES}
    leased = (account,) if account is not None else ()
    target = await PostgresStore.open(dsn, config=config, accounts=leased, schema=schema)
    try:
        before = await target.table_counts()
        held = {t: n for t, n in before.items() if t in COPIED_TABLES and n}
        if held:
            raise StoreError(
                f"the PostgreSQL database {target.where} already holds rows ({held}): "
                "migrate into an empty one"
            )
        source = await aiosqlite.connect(f"file:{path}?mode=ro", uri=True)
        try:
            async with target.transaction("migrate") as connection:
                for table in COPIED_TABLES:
                    await _copy_table(source, connection, table)
        finally:
            await source.close()
        after = await target.table_counts()
        report.target = {table: after.get(table, 0) for table in COPIED_TABLES}
    finally:
        await target.close()
    return report
