"""Persistence: the storage protocol and its records, an in-memory and an aiosqlite backend, the writer.

::

    records.py      frozen dataclasses, one per record kind (the values stored)
    protocol.py     the ``Store`` Protocol every backend implements
    errors.py       the store's exception tree
    memory.py       ``MemoryStore``: in-memory, for tests and the replay tool
    sqlite/         ``SqliteStore``: one file under GREYWIND_DATA_DIR, WAL, numbered migrations
    writer.py       ``StoreWriter``: bounded queue, one transaction per flush interval
    text.py         jieba segmentation for the full-text indexes
"""

from runtime.store.errors import (
    DataDirError,
    MigrationError,
    SchemaTooNewError,
    StoreClosedError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StoreWriteError,
    WriterError,
)
from runtime.store.protocol import MemoryScope, RestorePolicy, Store, StoreStatistics

__all__ = [
    "DataDirError",
    "MemoryScope",
    "MigrationError",
    "RestorePolicy",
    "SchemaTooNewError",
    "Store",
    "StoreClosedError",
    "StoreCorruptError",
    "StoreError",
    "StoreLockedError",
    "StoreStatistics",
    "StoreWriteError",
    "WriterError",
]
