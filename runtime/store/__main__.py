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
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from runtime.store.errors import StoreError
from runtime.store.paths import data_dir_from_env
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.store", description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, help="database file (default: the data dir's)")
    parser.add_argument("--backup", type=Path, help="also write a consistent copy to this new file")
    args = parser.parse_args(argv)
    path = args.path or data_dir_from_env() / DB_FILENAME
    if path.is_dir():
        path = path / DB_FILENAME
    if not path.is_file():
        print(
            f"error: no database at {path} (the bot's is {DB_FILENAME} in its data directory)",
            file=sys.stderr,
        )
        return 1
    try:
        asyncio.run(_report(path, args.backup))
    except (StoreError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
