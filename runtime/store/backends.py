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

An opener receives the ``[store]`` section and the data directory (one registered with
``scoped=True`` also the :class:`StoreScope`: which runtime stack the store is for) and returns an
open ``Store``; a name nobody registered is a ``ConfigError`` naming ``store.backend`` and the names
there are.

Scopes: with ``[[accounts]]`` each listed account's stack opens a store of its own. A file backend
keeps it in the account's data directory (``accounts/<qq id>/``, chosen by the caller); PostgreSQL,
one database for all, keeps each listed account's tables in a schema of its own
(``greywind_<qq id>``) and leases that account; the default stack keeps the home schema and leases
what :meth:`StoreScope.leases` says.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from runtime.config import ConfigError
from runtime.config.store import StoreConfig
from runtime.store.memory import MemoryStore
from runtime.store.protocol import Store
from runtime.store.sqlite import DB_FILENAME, SqliteStore

__all__ = [
    "WHOLE_DATABASE",
    "ScopedStoreOpener",
    "StoreOpener",
    "StoreScope",
    "open_store",
    "postgres_dsn",
    "process_leases",
    "register_backend",
    "registered_backends",
]

#: The lease name of a process that names no account: it serves the whole shared database.
WHOLE_DATABASE = "*"


@dataclass(frozen=True, slots=True)
class StoreScope:
    """Which runtime stack a store is opened for: ``account``, the listed account whose stack it is
    (None: the default stack, or the one stack of a process without ``[[accounts]]``); ``listed``,
    every account the process lists."""

    account: str | None = None
    listed: tuple[str, ...] = ()

    def leases(self, config: StoreConfig) -> tuple[str, ...]:
        """What this stack leases in a shared database. A listed account's stack: its account. The
        default stack: the ``lease_accounts`` no stack of their own serves; with none listed there,
        the whole database (``*``) when the process lists no account (as a process of one stack
        always did), else nothing (the accounts it serves are the listed ones' stacks')."""
        if self.account is not None:
            return (self.account,)
        rest = tuple(a for a in config.lease_accounts if a not in self.listed)
        if rest or self.listed:
            return rest
        return (WHOLE_DATABASE,)


def process_leases(config: StoreConfig, listed: Sequence[str]) -> tuple[str, ...]:
    """Every lease a process with these ``[[accounts]]`` ids takes, over all its stacks: what
    ``[store] lease_accounts`` comes to (left empty, the listed ids; with none listed either, ``*``)."""
    stacks = [StoreScope(account, tuple(listed)) for account in listed]
    names = [name for scope in [*stacks, StoreScope(None, tuple(listed))] for name in scope.leases(config)]
    return tuple(dict.fromkeys(names))


#: ``opener(config, data_dir)``: open (creating if needed) the backend's store under ``data_dir``.
StoreOpener = Callable[[StoreConfig, Path], Awaitable[Store]]
#: ``opener(config, data_dir, scope)``: the same, for the runtime stack ``scope`` names.
ScopedStoreOpener = Callable[[StoreConfig, Path, StoreScope], Awaitable[Store]]

_BACKENDS: dict[str, ScopedStoreOpener] = {}


def register_backend(
    name: str, opener: StoreOpener | ScopedStoreOpener, *, scoped: bool = False
) -> Callable[[], None]:
    """Make ``[store] backend = name`` open stores with ``opener`` (``scoped``: it takes the
    :class:`StoreScope` too); returns the function that unregisters it. A name already taken is
    refused (``ValueError``): one name, one backend."""
    if not name or name != name.strip():
        raise ValueError(f"store backend name {name!r} is empty or padded")
    if name in _BACKENDS:
        raise ValueError(f"store backend {name!r} is already registered")
    if scoped:
        full = cast("ScopedStoreOpener", opener)
    else:
        plain = cast("StoreOpener", opener)

        async def full(config: StoreConfig, data_dir: Path, scope: StoreScope) -> Store:
            return await plain(config, data_dir)

    _BACKENDS[name] = full

    def unregister() -> None:
        if _BACKENDS.get(name) is full:
            del _BACKENDS[name]

    return unregister


def registered_backends() -> tuple[str, ...]:
    """The names ``store.backend`` accepts, sorted."""
    return tuple(sorted(_BACKENDS))


async def open_store(config: StoreConfig, data_dir: Path, scope: StoreScope | None = None) -> Store:
    """Open the store ``config.backend`` names, its data under ``data_dir``, for the stack ``scope``
    names (default: the one stack of a process without accounts).

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
    return await opener(config, data_dir, scope or StoreScope())


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


async def _open_postgres(config: StoreConfig, data_dir: Path, scope: StoreScope) -> Store:
    dsn = postgres_dsn(config)
    try:
        from runtime.store.postgres import PostgresStore
        from runtime.store.postgres.schema import account_schema
    except ImportError as exc:  # asyncpg is the optional extra
        raise ConfigError(
            f"store.backend: 'postgresql' needs asyncpg ({exc}): pip install 'greywind[postgresql]'",
            ("store.backend",),
        ) from exc
    names = scope.leases(config)
    return await PostgresStore.open(
        dsn,
        config=config,
        accounts=names,
        schema=account_schema(scope.account) if scope.account is not None else None,
        lease=bool(names),
    )


async def _open_memory(config: StoreConfig, data_dir: Path) -> Store:
    return MemoryStore()


register_backend("sqlite", _open_sqlite)
register_backend("memory", _open_memory)
register_backend("postgresql", _open_postgres, scoped=True)
