"""The numbered migration scripts a SQL backend ships in its package's ``migrations`` folder.

A script is named ``NNNN_what_it_does.sql``; a backend's scripts are numbered 1, 2, 3... without gaps,
and its schema version is the number of the last one applied. Each backend applies them its own way
(SQLite under its file's write lock, PostgreSQL under an advisory lock per schema).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from runtime.store.errors import MigrationError

MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(package: str) -> list[Migration]:
    """The scripts in ``package``'s ``migrations`` folder, in version order; ``MigrationError`` when
    there are none or they are not numbered 1..n."""
    found: list[Migration] = []
    folder = resources.files(package) / "migrations"
    for entry in folder.iterdir():
        m = MIGRATION_NAME.match(entry.name)
        if m:
            found.append(Migration(int(m.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    found.sort(key=lambda mig: mig.version)
    if not found:
        raise MigrationError(0, f"no migration scripts found ({package}: migrations/*.sql)")
    if [mig.version for mig in found] != list(range(1, len(found) + 1)):
        raise MigrationError(
            0, f"{package}'s migration scripts are not numbered 1..n: {[m.name for m in found]}"
        )
    return found
