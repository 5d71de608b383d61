"""The PostgreSQL schema: numbered migrations applied at open, one process at a time.

Migrations are ``migrations/NNNN_name.sql`` (the same rules as SQLite's: 1, 2, 3... without gaps),
each applied in its own transaction together with its row in ``schema_version``. Several processes
may open one database at once: the migrations run under a session advisory lock, so the second
process waits and finds them applied. A database whose version is newer than the newest script is
refused (``SchemaTooNewError``) before anything is written.

Schemas: the tables live in the schema first on the connection's ``search_path`` (the DSN's own,
usually ``public``: the *home* schema). An account served by its own runtime stack (``[[accounts]]``)
keeps its tables in its own schema of the same database, :func:`account_schema` (``greywind_<qq
id>``), so no table is shared between accounts: the global lexicon, user profiles, memories and topic
threads are not keyed by account. Each schema is migrated on its own, under its own advisory lock
(:func:`migration_lock`): two processes migrating different schemas do not wait on each other.
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import Any

from runtime.store.errors import MigrationError, SchemaTooNewError
from runtime.store.sql.migrations import Migration
from runtime.store.sql.migrations import load_migrations as load_package_migrations

__all__ = [
    "LATEST_VERSION",
    "MIGRATION_LOCK",
    "Migration",
    "account_schema",
    "load_migrations",
    "migrate",
    "migration_lock",
    "quoted",
]

#: The advisory lock key the home schema's migrations run under ("GreyWind" in ASCII, as a number).
MIGRATION_LOCK = 0x47726579_57696E64
_ACCOUNT = re.compile(r"^[0-9]{1,20}$")


def account_schema(account: str) -> str:
    """The schema holding the tables of the listed account ``account`` (its QQ number)."""
    if not _ACCOUNT.match(account):
        raise ValueError(f"an account is its QQ number, like 10001, not {account!r}")
    return f"greywind_{account}"


def quoted(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def migration_lock(schema: str | None) -> int:
    """The advisory lock key the migrations of ``schema`` run under (None: the home schema's)."""
    if schema is None:
        return MIGRATION_LOCK
    digest = hashlib.blake2b(schema.encode("utf-8"), digest_size=8, person=b"greywind").digest()
    return int.from_bytes(digest, "big", signed=True)


def load_migrations() -> list[Migration]:
    """The shipped migration scripts, in version order (see :mod:`runtime.store.sql.migrations`)."""
    return load_package_migrations("runtime.store.postgres")


LATEST_VERSION = len(load_migrations())


async def migrate(connection: Any, where: str, schema: str | None = None) -> int:
    """Apply every pending migration on ``connection`` (an asyncpg connection); the version after.

    ``schema``: the schema the connection's ``search_path`` names, created here when it is missing
    (None: the home schema, which exists)."""
    import asyncpg

    migrations = load_migrations()
    lock = migration_lock(schema)
    await connection.execute("SELECT pg_advisory_lock($1)", lock)
    try:
        if schema is not None:
            try:
                await connection.execute(f"CREATE SCHEMA IF NOT EXISTS {quoted(schema)}")
            except asyncpg.PostgresError as exc:
                raise MigrationError(0, f"cannot create the schema {schema}: {exc}") from exc
        await connection.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version bigint PRIMARY KEY, name text NOT NULL, "
            "applied_at double precision NOT NULL)"
        )
        current = int(await connection.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_version"))
        if current > migrations[-1].version:
            raise SchemaTooNewError(where, current, migrations[-1].version)
        for mig in migrations:
            if mig.version <= current:
                continue
            try:
                async with connection.transaction():
                    await connection.execute(mig.sql)
                    await connection.execute(
                        "INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)",
                        mig.version,
                        mig.name,
                        time.time(),
                    )
            except asyncpg.PostgresError as exc:
                raise MigrationError(mig.version, str(exc)) from exc
            current = mig.version
        return current
    finally:
        await connection.execute("SELECT pg_advisory_unlock($1)", lock)
