"""Store backends by name: ``[store] backend = "sqlite"`` picks the opener registered under it.

The running bot, the replay and the tools open their store through :func:`open_store`, never a
backend class, so a backend added later (registered under its own name by the module that
provides it) is used by all of them alike, and the contract suite (``tests/store``) runs over
every name registered here. Built in:

- ``sqlite``: :class:`~runtime.store.sqlite.SqliteStore`, the file ``greywind.sqlite3`` under the
  data directory (WAL, numbered migrations): what the bot keeps across restarts.
- ``postgresql``: :class:`~runtime.store.postgres.PostgresStore`, a PostgreSQL database (the DSN in
  the environment variable ``[store] dsn_env`` names) that several bot processes share, each owning
  its accounts through a lease. asyncpg is imported only when this backend is opened.
- ``memory``: :class:`~runtime.store.memory.MemoryStore`, nothing on disk: everything is gone when
  the process ends (tests, experiments).

An opener receives the ``[store]`` section and the data directory and returns an open ``Store``;
a name nobody registered is a ``ConfigError`` naming ``store.backend`` and the names there are.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from runtime.config import ConfigError
from runtime.config.store import StoreConfig
from runtime.store.memory import MemoryStore
from runtime.store.protocol import Store
from runtime.store.sqlite import DB_FILENAME, SqliteStore

__all__ = ["StoreOpener", "open_store", "postgres_dsn", "register_backend", "registered_backends"]

#: ``opener(config, data_dir)``: open (creating if needed) the backend's store under ``data_dir``.
StoreOpener = Callable[[StoreConfig, Path], Awaitable[Store]]

_BACKENDS: dict[str, StoreOpener] = {}


def register_backend(name: str, opener: StoreOpener) -> Callable[[], None]:
    """Make ``[store] backend = name`` open stores with ``opener``; returns the function that
    unregisters it. A name already taken is refused (``ValueError``): one name, one backend."""
    if not name or name != name.strip():
        raise ValueError(f"store backend name {name!r} is empty or padded")
    if name in _BACKENDS:
        raise ValueError(f"store backend {name!r} is already registered")
    _BACKENDS[name] = opener

    def unregister() -> None:
        if _BACKENDS.get(name) is opener:
            del _BACKENDS[name]

    return unregister


def registered_backends() -> tuple[str, ...]:
    """The names ``store.backend`` accepts, sorted."""
    return tuple(sorted(_BACKENDS))


async def open_store(config: StoreConfig, data_dir: Path) -> Store:
    """Open the store ``config.backend`` names, its data under ``data_dir``.

    Raises ``ConfigError`` for a name no backend registered; the backend's own errors
    (``runtime.store.errors``) otherwise.
    """
    opener = _BACKENDS.get(config.backend)
    if opener is None:
        known = ", ".join(registered_backends()) or "none"
        raise ConfigError(
            f"store.backend: no store backend is registered as {config.backend!r} (registered: {known})",
            ("store.backend",),
        )
    return await opener(config, data_dir)


async def _open_sqlite(config: StoreConfig, data_dir: Path) -> Store:
    return await SqliteStore.open(data_dir / DB_FILENAME, config=config)


def postgres_dsn(config: StoreConfig) -> str:
    """The DSN from the environment variable ``config.dsn_env``; ``ConfigError`` when it is unset."""
    dsn = os.environ.get(config.dsn_env, "").strip()
    if not dsn:
        raise ConfigError(
            f"store.dsn_env: backend 'postgresql' reads its DSN from the environment variable "
            f"{config.dsn_env}, which is not set (postgresql://user:password@host:5432/database)",
            ("store.dsn_env",),
        )
    return dsn


async def _open_postgres(config: StoreConfig, data_dir: Path) -> Store:
    dsn = postgres_dsn(config)
    try:
        from runtime.store.postgres import PostgresStore
    except ImportError as exc:  # asyncpg is the optional extra
        raise ConfigError(
            f"store.backend: 'postgresql' needs asyncpg ({exc}): pip install 'greywind[postgresql]'",
            ("store.backend",),
        ) from exc
    return await PostgresStore.open(dsn, config=config)


async def _open_memory(config: StoreConfig, data_dir: Path) -> Store:
    return MemoryStore()


register_backend("sqlite", _open_sqlite)
register_backend("memory", _open_memory)
register_backend("postgresql", _open_postgres)
