"""``python -m runtime.store [PATH]``: what the database holds, and whether it is healthy.

Opens the database (``$GREYWIND_DATA_DIR/greywind.sqlite3`` unless a path is given) exactly as the
bot does — migrations included, and ``PRAGMA quick_check`` on opening — and prints its schema version
and rows per table. ``--backup FILE`` also writes a consistent copy. Exit status 1 on a store error (a
corrupt file that fails the check, a locked or a newer-schema file), with the error's message, and when
there is no database at the path: a mistyped path must not leave a new empty database behind. A data
directory stands for the database in it.

It is the SQLite backend's tool, whatever ``[store] backend`` says: it opens a database file by its
path and reads what only that backend has (schema version, tables, online backup), so it uses
``SqliteStore`` itself rather than a backend by name.

``python -m runtime.store rebind --account <self_id> [--platform qq] [PATH]`` binds every chat the
data directory holds without its account (``group:123``, written before chat keys named the account)
to that account: the database and the state files beside it (:mod:`runtime.store.rebind`). The bot
does this by itself at start for the chats whose account it recorded; this is for the rest. Stop the
bot first: a rebind while it runs would race its writes.

``python -m runtime.store migrate --from sqlite:PATH --to postgresql [--dsn-env VAR]`` copies an SQLite
database (a file, or the data directory holding it) into the empty PostgreSQL database whose DSN the
environment variable holds (``GREYWIND_PG_DSN`` by default), in one transaction, and compares every
table's row count afterwards (:mod:`runtime.store.postgres.copy`). Exit status 0 when all match, 1 on
a store error or a mismatch, 2 for bad arguments. The SQLite file is not changed. With ``--account
<qq id>`` the copy goes into that listed account's own schema (``greywind_<qq id>``, where the bot's
stack for that ``[[accounts]]`` table keeps its tables on PostgreSQL), from the account's data
directory (``<data dir>/accounts/<qq id>``), holding only that account's lease.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from runtime.store.errors import StoreError
from runtime.store.paths import data_dir_from_env
from runtime.store.rebind import bind_all
from runtime.store.sqlite import DB_FILENAME, SqliteStore


async def _report(path: Path, backup: Path | None) -> None:
    store = await SqliteStore.open(path)
    try:
        print(f"database:        {store.path}")
        print(f"schema version:  {store.schema_version}")
        for name, count in (await store.table_counts()).items():
            print(f"  {name:<24} {count:>10,}")
        if backup is not None:
            print(f"backup written:  {await store.backup(backup)}")
    finally:
        await store.close()


async def _rebind(path: Path, platform: str, account: str) -> None:
    store = await SqliteStore.open(path)
    try:
        report = await bind_all(store, path.parent, platform=platform, account=account)
        print(f"database:        {store.path}")
        print(f"chats rebound:   {report.chats} to {platform}:{account}")
        for name, count in sorted(report.rows.items()):
            print(f"  {name:<32} {count:>10,}")
        for name, count in sorted(report.kept.items()):
            print(f"  kept unbound (a bound twin exists): {name} {count:,}")
    finally:
        await store.close()


def _existing_database(given: Path | None) -> Path | None:
    """The database file meant (a data directory stands for the one in it), or None, said on stderr,
    when there is none: a mistyped path must not leave a new empty database behind."""
    path = given or data_dir_from_env() / DB_FILENAME
    if path.is_dir():
        path = path / DB_FILENAME
    if not path.is_file():
        print(f"error: no database at {path} (the bot's is {DB_FILENAME} in its data dir)", file=sys.stderr)
        return None
    return path


def rebind_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m runtime.store rebind", description="bind every unbound chat to one account"
    )
    parser.add_argument("path", nargs="?", type=Path, help="database file (default: the data dir's)")
    parser.add_argument("--account", required=True, help="the account (self_id) the chats were heard through")
    parser.add_argument("--platform", default="qq", help="the platform of that account (default: qq)")
    args = parser.parse_args(argv)
    path = _existing_database(args.path)
    if path is None:
        return 1
    try:
        asyncio.run(_rebind(path, args.platform, args.account))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


async def _migrate(path: Path, dsn: str, account: str | None) -> bool:
    from runtime.store.postgres.copy import copy_sqlite
    from runtime.store.postgres.schema import account_schema

    report = await copy_sqlite(path, dsn, account=account)
    print(f"from:            {path}")
    if account is not None:
        print(f"to schema:       {account_schema(account)} (account {account})")
    print(f"{'table':<24} {'sqlite':>10} {'postgresql':>12}")
    for table, count in report.source.items():
        print(f"  {table:<22} {count:>10,} {report.target.get(table, 0):>12,}")
    if report.unbound:
        print(
            f"warning: {len(report.unbound)} chat(s) without their account were copied as they are "
            "(python -m runtime.store rebind --account <self_id> binds them)",
            file=sys.stderr,
        )
    print("row counts match" if report.matches else "error: row counts differ")
    return report.matches


def migrate_main(argv: Sequence[str]) -> int:
    import os

    parser = argparse.ArgumentParser(
        prog="python -m runtime.store migrate", description="copy an SQLite database into PostgreSQL"
    )
    parser.add_argument("--from", dest="source", required=True, help="sqlite:PATH (a file or a data dir)")
    parser.add_argument("--to", dest="target", required=True, choices=["postgresql"], help="postgresql")
    parser.add_argument("--dsn-env", default="GREYWIND_PG_DSN", help="the variable holding the DSN")
    parser.add_argument(
        "--account", help="a listed account's QQ number: copy into its own schema (greywind_<id>)"
    )
    args = parser.parse_args(argv)
    if args.account is not None and not str(args.account).isdigit():
        print(f"error: --account takes the account's QQ number, not {args.account!r}", file=sys.stderr)
        return 2
    kind, _, given = str(args.source).partition(":")
    if kind != "sqlite" or not given:
        print(f"error: --from takes sqlite:PATH, not {args.source!r}", file=sys.stderr)
        return 2
    dsn = os.environ.get(args.dsn_env, "").strip()
    if not dsn:
        print(
            f"error: the environment variable {args.dsn_env} (the PostgreSQL DSN) is not set", file=sys.stderr
        )
        return 2
    path = _existing_database(Path(given))
    if path is None:
        return 1
    try:
        return 0 if asyncio.run(_migrate(path, dsn, args.account)) else 1
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["rebind"]:
        return rebind_main(argv[1:])
    if argv[:1] == ["migrate"]:
        return migrate_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m runtime.store", description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, help="database file (default: the data dir's)")
    parser.add_argument("--backup", type=Path, help="also write a consistent copy to this new file")
    args = parser.parse_args(argv)
    path = _existing_database(args.path)
    if path is None:
        return 1
    try:
        asyncio.run(_report(path, args.backup))
    except (StoreError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
