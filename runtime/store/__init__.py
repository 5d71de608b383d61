"""Persistence: the storage roles and their records, backends by name (in-memory, aiosqlite), the writer.

::

    records.py      frozen dataclasses, one per record kind (the values stored)
    roles.py        the role Protocols consumers take (``MessageRows``, ``ContextRows``...); ``RestorePolicy``
    protocol.py     ``Store``, the union of the roles, which every backend implements; its conventions
    backends.py     ``open_store(config, data_dir)``: the ``[store] backend`` by name; ``register_backend``
    errors.py       the store's exception tree
    text.py         jieba segmentation for the full-text indexes (same rules in both backends)
    segmenter.py    the cut itself: rjieba (compiled, off the GIL) while it cuts as jieba does, else jieba
    memory.py       ``MemoryStore``: in-memory, for tests and the replay tool (+ memory_tables.py)
    kernel_state.py the kernel's events, lexicon and speeches to records and back; restore_kernel
    sqlite/         ``SqliteStore``: one file, WAL, numbered migrations (``sqlite/migrations/``)
    postgres/       ``PostgresStore`` (asyncpg): a database several processes share, leases per account
    writer.py       ``StoreWriter``: bounded queue, one transaction per flush interval, counted drops
    restore.py      ``load_runtime_state`` on the Protocol alone
    paths.py        ``data_dir_from_env()``: ``GREYWIND_DATA_DIR``, default ``./data``
    __main__.py     ``python -m runtime.store [PATH] [--backup FILE]``: an SQLite file's status, rows, backup;
                    ``rebind``; ``migrate --from sqlite:PATH --to postgresql`` (docs/STORAGE.md)

Wiring (the lifespan owns it)::

    store = await open_store(cfg.store, data_dir)        # sqlite: data_dir/greywind.sqlite3
    state = await store.load_runtime_state(now=clock.now(), policy=RestorePolicy.from_config(cfg.store))
    writer = StoreWriter.from_config(store, cfg.store)
    task_group.start_soon(writer.run)                     # or: async with writer: ...
    writer.offer(StoredMessage.from_chat_message(msg, thread_id=...))   # per message: never waits
    ...
    await writer.aclose(timeout=2.0)                      # before cancelling the task group
    await store.close()

Durability: a committed transaction survives ``kill -9`` (WAL). What the writer had queued but not
committed is lost: at most one flush interval (``store.flush_interval_ms``, 200 ms) of writes, plus the
one commit in flight. ``tests/store/test_kill.py`` kills a real writing process and checks this bound.
A power cut or OS crash may also lose the last commits (``synchronous=NORMAL``), never corrupt the file.
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
