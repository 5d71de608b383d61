"""Leases: each account's state in a shared database is owned by one process at a time.

A lease is a row of ``leases`` (name, owner, host, pid, expires_at). A process takes the leases of
the accounts it serves when it opens the store, and renews them in the background every third of
``[store] lease_ttl_ms``; on a clean stop it deletes them. A process that crashed (``kill -9``, a
power cut, a lost network) renews nothing: its leases expire one TTL after the last renewal and the
next process takes them over. The times are the server's clock (``now()``), so the machines' clocks
need not agree.

Why rows with a TTL, not session advisory locks: an advisory lock lasts as long as the server sees
the connection, and a server sees a vanished client (a machine that lost power, a cut network) only
when TCP keepalive gives up, which by default takes hours. A lease expires on a clock the operator
sets. The price is that a crashed owner's accounts wait out the TTL before another process may serve
them.

Names: an account's ``self_id``, or :data:`WHOLE` (``*``) for a process that names no account and so
serves whatever the database holds. ``*`` excludes every account lease and each account lease
excludes ``*``. All takes are serialised by a transaction-scoped advisory lock, so two processes
starting at once cannot both win.

The ``leases`` table is the home schema's (the DSN's own), whichever schema an account's tables are
in (:func:`runtime.store.postgres.schema.account_schema`): one table that every process of the
database reads, so ``*`` and the accounts' leases exclude each other as above.

A renewal that finds a lease gone (another process took it after it expired: this process stalled
or was cut off longer than the TTL) marks the lease lost: the store refuses every write after that
(``StoreLeaseError``) and says so in the log, rather than write beside the new owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import asyncpg
import structlog

from runtime.store.backends import WHOLE_DATABASE as WHOLE
from runtime.store.errors import StoreError, StoreLeaseError

__all__ = ["WHOLE", "LeaseHolder", "Leases", "check_free", "holders"]

log = structlog.get_logger("greywind.store")

_TAKE_LOCK = 0x47726579_4C656173  # "GreyLeas"


class LeaseHolder(tuple[str, str, str, int, datetime, float]):
    """``(name, owner, host, pid, expires_at, seconds_left)`` of a live lease."""

    @property
    def name(self) -> str:
        return self[0]

    def describe(self) -> str:
        name, _, host, pid, expires_at, left = self
        what = "the whole database" if name == WHOLE else f"account {name}"
        return (
            f"{what} is served by another GreyWind process (pid {pid} on {host}); its lease runs until "
            f"{expires_at.isoformat(timespec='seconds')} ({left:.0f}s): stop that process first, or, if it "
            "crashed, start again once the lease has expired"
        )


async def holders(
    connection: Any, names: Sequence[str], owner: str = "", table: str = "leases"
) -> list[LeaseHolder]:
    """The live leases, held by someone other than ``owner``, that exclude taking ``names``;
    ``table``: the leases table as the connection names it."""
    wanted = list(names)
    whole = WHOLE in wanted
    rows = await connection.fetch(
        "SELECT name, owner, host, pid, expires_at, EXTRACT(EPOCH FROM expires_at - now())::float8 "
        f"FROM {table} WHERE expires_at > now() AND owner <> $1 "
        "AND (name = ANY($2::text[]) OR name = $3 OR $4) "
        "ORDER BY name",
        owner,
        wanted,
        WHOLE,
        whole,
    )
    return [LeaseHolder((r[0], r[1], r[2], int(r[3]), r[4], float(r[5]))) for r in rows]


class Leases:
    """The leases one process holds; renewed until :meth:`release`."""

    def __init__(
        self, pool: asyncpg.Pool, names: tuple[str, ...], owner: str, ttl: float, table: str = "leases"
    ) -> None:
        self._pool = pool
        self._table = table
        self.names = names
        self.owner = owner
        self.ttl = ttl
        self._lost: Callable[[str], None] | None = None
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def take(
        cls, pool: asyncpg.Pool, names: Sequence[str], *, ttl: float, table: str = "leases"
    ) -> Leases:
        """Take every lease in ``names`` or none: ``StoreLeaseError`` names the first one held.
        ``table``: the leases table as the pool's connections name it (schema-qualified when their
        ``search_path`` is an account's schema)."""
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        taken = cls(pool, tuple(dict.fromkeys(names)), owner, ttl, table)
        async with pool.acquire() as connection, connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock($1)", _TAKE_LOCK)
            held = await holders(connection, taken.names, owner, table)
            if held:
                raise StoreLeaseError(held[0].describe())
            await connection.executemany(
                f"INSERT INTO {table} (name, owner, host, pid, acquired_at, expires_at) "
                "VALUES ($1, $2, $3, $4, now(), now() + make_interval(secs => $5)) "
                "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, host = excluded.host, "
                "pid = excluded.pid, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at",
                [(name, owner, socket.gethostname(), os.getpid(), ttl) for name in taken.names],
            )
        taken._task = asyncio.create_task(taken._renew_forever(), name="store-lease-renewal")
        log.info("store.leases_taken", leases=list(taken.names), ttl_s=ttl, owner=owner)
        return taken

    def on_lost(self, callback: Callable[[str], None]) -> None:
        self._lost = callback

    async def renew(self) -> bool:
        """Push every lease's expiry one TTL on; False (and the loss reported) when one is gone."""
        async with self._pool.acquire(timeout=self.ttl) as connection:
            rows = await connection.fetch(
                f"UPDATE {self._table} SET expires_at = now() + make_interval(secs => $3) "
                "WHERE name = ANY($1::text[]) AND owner = $2 RETURNING name",
                list(self.names),
                self.owner,
                self.ttl,
            )
        kept = {r[0] for r in rows}
        gone = [n for n in self.names if n not in kept]
        if gone:
            problem = (
                f"the lease of {', '.join(gone)} was taken over by another process after it expired; "
                "this process no longer writes"
            )
            log.error("store.lease_lost", leases=gone, owner=self.owner)
            if self._lost is not None:
                self._lost(problem)
            return False
        return True

    async def _renew_forever(self) -> None:
        interval = self.ttl / 3
        while True:
            await asyncio.sleep(interval)
            try:
                if not await self.renew():
                    return
            except (TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
                # The server is away: the next renewal tries again; the lease may expire meanwhile.
                log.warning("store.lease_renewal_failed", error=str(exc), owner=self.owner)

    async def release(self) -> None:
        """Stop renewing and give the leases back (a failure only logs: they expire anyway)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            async with self._pool.acquire(timeout=5) as connection:
                await connection.execute(
                    f"DELETE FROM {self._table} WHERE name = ANY($1::text[]) AND owner = $2",
                    list(self.names),
                    self.owner,
                )
        except (TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            log.warning("store.lease_release_failed", error=str(exc), owner=self.owner)


async def check_free(dsn: str, names: Sequence[str]) -> None:
    """Before a start: ``StoreLeaseError`` when a live lease of another process excludes ``names``,
    ``StoreError`` when the server cannot be reached. Takes nothing (the store takes the leases when
    it opens, atomically); a database without the leases table yet has none."""
    try:
        connection = await asyncpg.connect(dsn, timeout=10)
    except (TimeoutError, asyncpg.PostgresError, OSError, ValueError) as exc:
        raise StoreError(f"cannot connect to the PostgreSQL database in the DSN: {exc}") from exc
    try:
        if await connection.fetchval("SELECT to_regclass('leases')") is None:
            return
        held = await holders(connection, list(names) or [WHOLE])
    finally:
        await connection.close()
    if held:
        raise StoreLeaseError(held[0].describe())
