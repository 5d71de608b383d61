"""``[store]``: the backend, the SQLite database and the writer task that feeds it.

``backend`` names a registered store backend (``runtime.store.backends``): ``sqlite``, the file
``greywind.sqlite3`` under the data directory, ``postgresql``, a PostgreSQL database several bot
processes may share (its DSN in the environment variable ``dsn_env`` names, never in this file), or
``memory``, nothing kept. The data directory comes
from the ``GREYWIND_DATA_DIR`` environment variable (default ``./data``), not from this table: see
``runtime.store.paths.data_dir_from_env``.
"""

from __future__ import annotations

from pydantic import Field

from runtime.config._base import Section


class StoreConfig(Section):
    # The name a backend is registered under (runtime.store.backends). Checked when the store is
    # opened, against the names registered by then: an unknown one is refused, listing them.
    backend: str = Field(default="sqlite", min_length=1)
    # The writer commits its queue once per interval (or sooner, at flush_max_items). A kill -9
    # loses at most the messages queued since the last commit: about one interval.
    flush_interval_ms: int = Field(default=200, ge=10, le=10_000)
    flush_max_items: int = Field(default=500, ge=1)
    # A full queue makes background producers wait; the message path never waits: what does not
    # fit is dropped, counted (/status) and logged with counts.
    queue_max: int = Field(default=10_000, ge=1)
    # SQLite waits this long for another connection's lock inside each attempt (a write's attempts
    # together never longer than write_wait_ms)...
    busy_timeout_ms: int = Field(default=5_000, ge=0)
    # ...and the store tries this many more times, backing off from lock_backoff_ms, before it
    # raises StoreLockedError.
    lock_retries: int = Field(default=3, ge=0)
    lock_backoff_ms: int = Field(default=100, ge=1)
    # A write waits at most this long for the database (this process's other writes and another
    # connection's lock together), then fails: the writer retries its batches, other writes carry
    # on without theirs, so no reply waits behind a locked database.
    write_wait_ms: int = Field(default=1_000, ge=1)
    # A failed flush (full disk, I/O error, a lock) is retried with backoff from retry_backoff_ms,
    # doubling up to retry_backoff_max_ms; the batch stays queued meanwhile.
    retry_backoff_ms: int = Field(default=200, ge=1)
    retry_backoff_max_ms: int = Field(default=30_000, ge=1)
    # PRAGMA quick_check at start: a corrupt file is refused instead of silently losing data.
    quick_check_on_start: bool = True
    # What is restored on start: speeches inside the window (budgets), each chat's recent messages
    # (conversation-thread links).
    restore_speech_window_ms: int = Field(default=86_400_000, ge=0)
    restore_message_window_ms: int = Field(default=3_600_000, ge=0)
    restore_messages_per_chat: int = Field(default=200, ge=0)
    # postgresql: the environment variable holding the DSN (postgresql://user:password@host/db). The
    # DSN carries a password, so it is never written in this file.
    dsn_env: str = Field(default="GREYWIND_PG_DSN", min_length=1)
    # postgresql: the accounts (self_id) whose state this process owns in the shared database. Each is
    # leased at start: a second process for one of them is refused. Empty: the [[accounts]] ids when
    # accounts are listed (each listed account's stack leases its own); with none listed either, the
    # process leases the whole database ("*"), and no other process may use it.
    lease_accounts: list[str] = Field(default_factory=list)
    # postgresql: a lease lasts this long after its last renewal (renewed every third of it), so a
    # crashed process's accounts can be served by another one this long after the crash.
    lease_ttl_ms: int = Field(default=15_000, ge=1_000, le=600_000)
    # postgresql: connections this process keeps to the server.
    pool_size: int = Field(default=4, ge=1, le=100)
