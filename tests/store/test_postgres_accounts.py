"""Listed accounts on one PostgreSQL database: a schema each, nothing crossing, leases per account.

On the real (throwaway) server, the stores each runtime stack of a process with ``[[accounts]]``
opens (:class:`runtime.store.backends.StoreScope`): what one account's stack writes to the tables no
chat key narrows (the global lexicon, user profiles, memories, topic threads) the other account's and
the default stack's stores never see; the leases are the accounts', in the one table every process
reads; ``python -m runtime.store migrate --account`` copies an account's data directory into that
account's schema while a process serving another account keeps its lease.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from runtime.config.store import StoreConfig
from runtime.store.__main__ import main
from runtime.store.backends import WHOLE_DATABASE, StoreScope, open_store, process_leases
from runtime.store.errors import StoreLeaseError
from runtime.store.protocol import Store
from runtime.store.records import (
    LexiconTermRecord,
    Memory,
    ScopeType,
    StoredMessage,
    TopicThread,
    UserProfile,
)
from runtime.store.sqlite import DB_FILENAME, SqliteStore

A, B, UNLISTED = "10001", "10002", "10003"
LISTED = (A, B)
PG = StoreConfig(backend="postgresql")


async def leases(dsn: str) -> dict[str, str]:
    """name -> owner of the leases in the home schema's table."""
    connection = await asyncpg.connect(dsn)
    try:
        return {r[0]: r[1] for r in await connection.fetch("SELECT name, owner FROM leases")}
    finally:
        await connection.close()


async def schemas(dsn: str) -> set[str]:
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'greywind_%'")
    finally:
        await connection.close()
    return {r[0] for r in rows}


async def write_everything(store: Store, account: str) -> None:
    chat = f"qq:{account}:group:500"
    await store.append_messages([StoredMessage(chat, "m1", "42", "阿青", 1.0, "今晚打原神吗")])
    await store.save_lexicon_terms([LexiconTermRecord("global", "", "原神", 0.9)])
    await store.upsert_user_profile(UserProfile("42", "阿青", 2.0, preferences=("喜欢原神",)))
    await store.upsert_memory(Memory("mem-1", ScopeType.IDENTITY, "", "fact", "阿青喜欢原神", 0.8, 3.0, 3.0))
    await store.upsert_topic_thread(TopicThread("tt-1", "原神开黑", "chat", "", 4.0, 4.0, chat_ids=(chat,)))


async def sees_anything(store: Store) -> list[object]:
    seen: list[object] = []
    seen += await store.load_lexicon_terms()
    seen += [p for p in [await store.get_user_profile("42")] if p is not None]
    seen += await store.list_memories(scopes=[(ScopeType.IDENTITY, "")])
    seen += [h.memory for h in await store.search_memories("原神", scopes=[(ScopeType.IDENTITY, "")])]
    seen += await store.list_topic_threads()
    seen += [m for m in [await store.get_memory("mem-1")] if m is not None]
    return seen


def test_lease_accounts_defaults_to_the_listed_accounts() -> None:
    assert process_leases(StoreConfig(), ()) == (WHOLE_DATABASE,)  # no accounts: as before
    assert process_leases(StoreConfig(lease_accounts=["7"]), ()) == ("7",)
    assert process_leases(StoreConfig(), LISTED) == LISTED
    assert process_leases(StoreConfig(lease_accounts=[UNLISTED, A]), LISTED) == (A, B, UNLISTED)
    assert StoreScope(A, LISTED).leases(StoreConfig()) == (A,)
    assert StoreScope(None, LISTED).leases(StoreConfig()) == ()  # the default stack: nothing
    assert StoreScope(None, LISTED).leases(StoreConfig(lease_accounts=[UNLISTED])) == (UNLISTED,)
    assert StoreScope(None, ()).leases(StoreConfig()) == (WHOLE_DATABASE,)


@pytest.mark.asyncio
async def test_two_listed_accounts_on_one_database_share_no_table(postgres_dsn: str, tmp_path: Path) -> None:
    a = await open_store(PG, tmp_path / A, StoreScope(A, LISTED))
    b = await open_store(PG, tmp_path / B, StoreScope(B, LISTED))
    default = await open_store(PG, tmp_path, StoreScope(None, LISTED))
    try:
        await write_everything(a, A)
        assert len(await sees_anything(a)) == 6
        assert await sees_anything(b) == []
        assert await sees_anything(default) == []
        assert await b.count_messages() == 0
        assert await default.count_messages() == 0
        # B writes the same keys in its own schema: A's rows stay as A wrote them.
        await b.upsert_user_profile(UserProfile("42", "别的名字", 9.0))
        profile = await a.get_user_profile("42")
        assert profile is not None
        assert profile.nickname == "阿青"
        # Each account's stack leased its own account, in the one leases table; nobody leased "*".
        held = await leases(postgres_dsn)
        assert set(held) == {A, B}
        assert held[A] != held[B]
        assert await schemas(postgres_dsn) == {f"greywind_{A}", f"greywind_{B}"}
        # A second stack for A (another process) is refused; the default stack took nothing.
        with pytest.raises(StoreLeaseError, match=f"account {A} is served"):
            await open_store(PG, tmp_path / "again", StoreScope(A, LISTED))
        # What each stack restores is its own.
        state = await a.load_runtime_state(now=5.0)
        assert [t.id for t in state.topic_threads] == ["tt-1"]
        assert [t.term for t in state.lexicon_terms] == ["原神"]
        assert (await b.load_runtime_state(now=5.0)).topic_threads == ()
        assert (await default.load_runtime_state(now=5.0)).lexicon_terms == ()
    finally:
        for store in (a, b, default):
            await store.close()
    assert await leases(postgres_dsn) == {}
    # Opened again (a restart), A finds its rows in its schema.
    again = await open_store(PG, tmp_path / A, StoreScope(A, LISTED))
    try:
        assert len(await sees_anything(again)) == 6
    finally:
        await again.close()


@pytest.mark.asyncio
async def test_two_processes_migrating_one_new_account_schema_at_once_both_open_it(
    postgres_dsn: str, tmp_path: Path
) -> None:
    first, second = await asyncio.gather(
        open_store(PG, tmp_path, StoreScope(A, (A,))),
        open_store(PG, tmp_path, StoreScope(B, (B,))),
    )
    try:
        assert first.statistics().schema_version == second.statistics().schema_version > 0
    finally:
        await first.close()
        await second.close()


def test_migrate_account_copies_its_directory_into_its_schema(
    postgres_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    account_dir = tmp_path / "data" / "accounts" / A
    account_dir.mkdir(parents=True)

    async def fill() -> None:
        store = await SqliteStore.open(account_dir / DB_FILENAME)
        try:
            await write_everything(store, A)
        finally:
            await store.close()

    asyncio.run(fill())

    async def migrate_beside_b() -> int:
        # A process serving B keeps running: the copy leases A only.
        b = await open_store(PG, tmp_path / B, StoreScope(B, (A, B)))
        try:
            argv = ["migrate", "--from", f"sqlite:{account_dir}", "--to", "postgresql", "--account", A]
            return await asyncio.to_thread(main, argv)
        finally:
            await b.close()

    assert asyncio.run(migrate_beside_b()) == 0
    out = capsys.readouterr().out
    assert f"greywind_{A}" in out
    assert "row counts match" in out

    async def check() -> None:
        a = await open_store(PG, tmp_path / A, StoreScope(A, (A, B)))
        b = await open_store(PG, tmp_path / B, StoreScope(B, (A, B)))
        default = await open_store(PG, tmp_path, StoreScope(None, (A, B)))
        try:
            assert len(await sees_anything(a)) == 6
            assert [m.text for m in await a.recent_messages(f"qq:{A}:group:500", limit=5)] == ["今晚打原神吗"]
            assert [
                h.message.text for h in await a.search_messages("原神", chat_ids=[f"qq:{A}:group:500"])
            ] == ["今晚打原神吗"]
            assert await sees_anything(b) == []
            assert await sees_anything(default) == []
        finally:
            for store in (a, b, default):
                await store.close()

    asyncio.run(check())
    # Into a schema that already holds rows: refused, nothing copied twice.
    argv = ["migrate", "--from", f"sqlite:{account_dir}", "--to", "postgresql", "--account", A]
    assert main(argv) == 1
    assert "already holds rows" in capsys.readouterr().err
    assert main([*argv[:-1], "not-a-number"]) == 2
