"""Faults raised by the store. A missing row is a value (``None``), not an exception.

::

    StoreError              base of everything the store raises on purpose
    ├── DataDirError        the data directory cannot be created or written (names the path)
    ├── StoreCorruptError   the database file is not a database, or fails its integrity check
    ├── SchemaTooNewError   the file was written by a newer GreyWind (its schema version > ours)
    ├── MigrationError      a numbered migration failed; the database stays at the last good version
    ├── StoreLockedError    another connection kept the database locked through the busy timeout
    │                       and every retry
    ├── StoreWriteError     a write failed (full disk, I/O error, read-only file); the transaction
    │                       was rolled back, so the batch can be retried whole
    ├── PartlyWrittenError  a batch that made way for another write mid-way failed after that: its
    │                       first ``applied`` items are committed, the rest can be retried
    ├── StoreReadError      a read failed on a database server (PostgreSQL: the connection dropped)
    ├── StoreLeaseError     another process owns an account this one would serve (PostgreSQL
    │                       leases), or this process lost the lease it held
    ├── StoreClosedError    an operation reached a store (or writer) that was already closed
    └── WriterError         the writer stopped with items it could not write (counted and logged,
                            never dropped silently)
"""

from __future__ import annotations


class StoreError(Exception):
    """Base class of the store's own faults."""


class DataDirError(StoreError):
    """Raised at start when the data directory is missing and cannot be created, or is not writable."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(
            f"data directory {path!r}: {problem} (set GREYWIND_DATA_DIR to a writable directory)"
        )
        self.path = path


class StoreCorruptError(StoreError):
    """Raised at start when the file is not an SQLite database or fails ``PRAGMA quick_check``."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(
            f"database {path!r} is corrupt: {problem}. "
            "It was left untouched; restore a backup or move it away"
        )
        self.path = path


class SchemaTooNewError(StoreError):
    """Raised at start when the database's schema version is newer than this code knows."""

    def __init__(self, path: str, found: int, known: int) -> None:
        super().__init__(
            f"database {path!r} has schema version {found}, newer than this GreyWind understands ({known}); "
            "upgrade GreyWind or point GREYWIND_DATA_DIR elsewhere"
        )
        self.found = found
        self.known = known


class MigrationError(StoreError):
    """Raised at start when a migration script fails; its transaction is rolled back."""

    def __init__(self, version: int, problem: str) -> None:
        super().__init__(f"migration {version:04d} failed: {problem}")
        self.version = version


class StoreLockedError(StoreError):
    """Raised when the database stayed locked by another connection through every retry."""


class StoreWriteError(StoreError):
    """Raised when SQLite refuses a write for a reason other than a lock; nothing of it was applied."""


class PartlyWrittenError(StoreError):
    """Raised by a batch write that committed its first ``applied`` items to let another write in
    (:meth:`~runtime.store.addressed_first.AddressedFirstLock.wanted`) and then failed on the rest;
    ``error`` is that failure (also the ``__cause__``). The rest can be retried alone."""

    def __init__(self, applied: int, error: Exception) -> None:
        super().__init__(f"the first {applied} item(s) were written, then: {type(error).__name__}: {error}")
        self.applied = applied
        self.error = error


class StoreReadError(StoreError):
    """Raised when a read fails on a database server (PostgreSQL): the connection dropped, say."""


class StoreLeaseError(StoreError):
    """Raised when another process owns an account this one would serve (its lease has not expired),
    or when this process lost the lease it held; its message is one line an operator can act on."""


class StoreClosedError(StoreError):
    """Raised when a closed store or writer is used."""


class WriterError(StoreError):
    """Raised by ``StoreWriter.aclose`` when items could not be written before the writer stopped."""

    def __init__(self, unwritten: int, problem: str) -> None:
        super().__init__(f"writer stopped with {unwritten} unwritten item(s): {problem}")
        self.unwritten = unwritten
