"""Leases on the real (throwaway) server: one process per account, ``*`` for the whole database, expiry
after a crash, and a store that lost its lease writing nothing more."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from runtime.config.store import StoreConfig
from runtime.store.errors import StoreLeaseError
from runtime.store.postgres import PostgresStore
from runtime.store.postgres.lease import check_free
from runtime.store.records import StoredMessage

pytestmark = pytest.mark.asyncio

SHORT = StoreConfig(lease_ttl_ms=1_000)


async def test_an_account_is_leased_once_and_other_accounts_beside_it(postgres_dsn: str) -> None:
    first = await PostgresStore.open(postgres_dsn, accounts=["1"])
    try:
        with pytest.raises(
            StoreLeaseError, match=r"^account 1 is served by another GreyWind process \(pid \d+"
        ):
            await PostgresStore.open(postgres_dsn, accounts=["1"])
        with pytest.raises(StoreLeaseError, match="account 1 is served"):
            await PostgresStore.open(postgres_dsn, accounts=["2", "1"])  # all or nothing...
        beside = await PostgresStore.open(postgres_dsn, accounts=["2"])  # ...so 2 was not taken
        with pytest.raises(StoreLeaseError, match="account 1"):
            await PostgresStore.open(postgres_dsn)  # the whole database: excluded by any account
        await beside.close()
        with pytest.raises(StoreLeaseError, match="account 1"):
            await check_free(postgres_dsn, ["1"])
        await check_free(postgres_dsn, ["2"])  # released on close
    finally:
        await first.close()
    whole = await PostgresStore.open(postgres_dsn)
    try:
        with pytest.raises(StoreLeaseError, match=r"^the whole database is served"):
            await PostgresStore.open(postgres_dsn, accounts=["3"])
    finally:
        await whole.close()


async def test_a_lease_nobody_renews_expires_and_the_old_owner_stops_writing(postgres_dsn: str) -> None:
    stalled = await PostgresStore.open(postgres_dsn, config=SHORT, accounts=["7"])
    # A stalled owner: its renewals stop (the task is cancelled), its row stays until the TTL.
    leases = stalled._leases
    assert leases is not None
    assert leases._task is not None
    leases._task.cancel()
    with pytest.raises(StoreLeaseError):
        await PostgresStore.open(postgres_dsn, config=SHORT, accounts=["7"])
    await asyncio.sleep(1.2)
    successor = await PostgresStore.open(postgres_dsn, config=SHORT, accounts=["7"])
    try:
        assert await leases.renew() is False  # the old owner finds its lease gone...
        with pytest.raises(StoreLeaseError, match="taken over by another process"):
            await stalled.append_messages([StoredMessage("qq:7:group:1", "1", "u", "A", 1.0, "迟到的写入")])
        assert await successor.count_messages() == 0  # ...and wrote nothing beside the new one
        await successor.append_messages([StoredMessage("qq:7:group:1", "2", "u", "A", 2.0, "新主人")])
        assert await successor.count_messages() == 1
    finally:
        await stalled.close()
        await successor.close()
    connection = await asyncpg.connect(postgres_dsn)
    try:
        assert await connection.fetchval("SELECT COUNT(*) FROM leases") == 0  # each closed its own
    finally:
        await connection.close()


async def test_a_process_restores_only_its_own_accounts(postgres_dsn: str) -> None:
    writer = await PostgresStore.open(postgres_dsn, accounts=["1", "2"])
    try:
        await writer.append_messages(
            [
                StoredMessage("qq:1:group:5", "a", "u", "A", 100.0, "一号的"),
                StoredMessage("qq:2:group:5", "b", "u", "A", 100.0, "二号的"),
            ]
        )
    finally:
        await writer.close()
    one = await PostgresStore.open(postgres_dsn, accounts=["1"])
    try:
        state = await one.load_runtime_state(now=200.0)
        assert [m.chat_id for m in state.recent_messages] == ["qq:1:group:5"]
    finally:
        await one.close()
