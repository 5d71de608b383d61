"""Several bot processes, one PostgreSQL database: each account is served by one process at a time.

Real ``bot.py`` processes on the session's throwaway PostgreSQL server. A second process for an
account another live process serves exits at once (status 4, one line naming the holder); a process
for another account starts beside it; a ``kill -9``-ed owner's lease expires after its TTL, and then
a new process takes the account over and serves it. Processes with ``[[accounts]]`` tables (one per
account) lease exactly the accounts they list and keep each account's tables in its own schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.live import TEST_API_KEY, connected_peer, own_errors
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio, pytest.mark.timeout(240)]

ALICE, BOB = 10_000, 20_000
TTL_MS = 3_000


def config(account: int) -> str:
    return f'[store]\nbackend = "postgresql"\nlease_accounts = ["{account}"]\nlease_ttl_ms = {TTL_MS}\n'


def listed_config(account: int) -> str:
    """A process with one ``[[accounts]]`` table and no ``lease_accounts``: it leases its account."""
    return (
        f'[store]\nbackend = "postgresql"\nlease_ttl_ms = {TTL_MS}\n\n'
        f'[[accounts]]\nid = {account}\n[accounts.persona]\nname = "灰风{account}"\naliases = []\n'
    )


@pytest.fixture
def model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer({"default": {"text": "在呢"}}) as server:
        yield server


@pytest.fixture
def bots() -> Iterator[list[BotProcess]]:
    started: list[BotProcess] = []
    yield started
    for bot in started:
        with contextlib.suppress(Exception):
            bot.stop(timeout=10)
        bot.kill()


def bot_for(
    tmp_path: Path,
    name: str,
    account: int,
    dsn: str,
    model: ScriptedOpenAIServer,
    started: list[BotProcess],
    config_text: str | None = None,
) -> BotProcess:
    bot = BotProcess(
        tmp_path / name,
        config=config(account) if config_text is None else config_text,
        env={
            "GREYWIND_PG_DSN": dsn,
            "GREYWIND_LLM_BASE_URL": model.base_url,
            "GREYWIND_LLM_MODEL": "scripted",
            "GREYWIND_LLM_API_KEY": TEST_API_KEY,
        },
    )
    started.append(bot)
    return bot


async def leases(dsn: str) -> dict[str, tuple[int, float]]:
    """name -> (pid, seconds left) of the leases in the database."""
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(
            "SELECT name, pid, EXTRACT(EPOCH FROM expires_at - now())::float8 FROM leases ORDER BY name"
        )
    finally:
        await connection.close()
    return {r[0]: (int(r[1]), float(r[2])) for r in rows}


async def answers(bot: BotProcess, account: int, user: int) -> None:
    async with connected_peer(bot, self_id=account) as peer:
        await peer.post(ob.private_message(self_id=account, user_id=user, message=[ob.text("在吗")]))
        await peer.wait_for_call("send_private_msg", within=15)


async def test_one_process_per_account_and_a_crashed_owners_lease_expires(
    tmp_path: Path, postgres_dsn: str, model: ScriptedOpenAIServer, bots: list[BotProcess]
) -> None:
    first = bot_for(tmp_path, "a1", ALICE, postgres_dsn, model, bots).start()
    await answers(first, ALICE, 4_001)

    # A second process for the same account: refused before it starts anything, in one line.
    second = bot_for(tmp_path, "a2", ALICE, postgres_dsn, model, bots)
    with pytest.raises(RuntimeError, match="exited with 4"):
        second.start()
    lines = [line for line in second.output().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"greywind: account {ALICE} is served by another GreyWind process (pid {first.pid}"
    )

    # Another account's process shares the database beside it.
    other = bot_for(tmp_path, "b1", BOB, postgres_dsn, model, bots).start()
    await answers(other, BOB, 4_002)
    held = await leases(postgres_dsn)
    assert held[str(ALICE)][0] == first.pid
    assert held[str(BOB)][0] == other.pid
    assert other.stop() == 0
    assert str(BOB) not in await leases(postgres_dsn)  # a clean stop gives the lease back

    # The owner crashes: its lease stays until the TTL runs out, then a new process takes over.
    crashed = first.pid
    first.kill()  # SIGKILL: nothing runs on the way out
    killed_at = time.monotonic()
    pid, left = (await leases(postgres_dsn))[str(ALICE)]
    assert pid == crashed
    assert 0 < left <= TTL_MS / 1000
    await asyncio.sleep(left + 0.2)
    third = bot_for(tmp_path, "a3", ALICE, postgres_dsn, model, bots).start()
    await answers(third, ALICE, 4_003)
    assert time.monotonic() - killed_at >= left
    assert (await leases(postgres_dsn))[str(ALICE)][0] == third.pid
    assert third.stop() == 0
    assert own_errors(third) == []


async def stored_texts(dsn: str, schema: str) -> list[str]:
    """The texts of the messages in ``schema``'s table (empty when the schema has none)."""
    connection = await asyncpg.connect(dsn)
    try:
        if await connection.fetchval("SELECT to_regclass($1)", f"{schema}.messages") is None:
            return []
        return [r[0] for r in await connection.fetch(f"SELECT text FROM {schema}.messages ORDER BY seq")]
    finally:
        await connection.close()


async def test_a_process_per_listed_account_serves_its_account_beside_the_other(
    tmp_path: Path, postgres_dsn: str, model: ScriptedOpenAIServer, bots: list[BotProcess]
) -> None:
    alice = bot_for(tmp_path, "a", ALICE, postgres_dsn, model, bots, listed_config(ALICE)).start()
    bob = bot_for(tmp_path, "b", BOB, postgres_dsn, model, bots, listed_config(BOB)).start()
    await answers(alice, ALICE, 4_001)
    await answers(bob, BOB, 4_002)
    # Each leased exactly its listed account (not the whole database), so neither refused the other.
    held = await leases(postgres_dsn)
    assert {name: pid for name, (pid, _) in held.items()} == {str(ALICE): alice.pid, str(BOB): bob.pid}
    # A second process listing ALICE is refused before it starts anything.
    again = bot_for(tmp_path, "a2", ALICE, postgres_dsn, model, bots, listed_config(ALICE))
    with pytest.raises(RuntimeError, match="exited with 4"):
        again.start()
    assert f"account {ALICE} is served by another GreyWind process (pid {alice.pid}" in again.output()
    # Each account's messages are in its own schema; the home schema's tables hold neither.
    for _ in range(50):  # the writer commits within a flush interval
        if all([await stored_texts(postgres_dsn, f"greywind_{n}") for n in (ALICE, BOB)]):
            break
        await asyncio.sleep(0.2)
    assert "在吗" in await stored_texts(postgres_dsn, f"greywind_{ALICE}")
    assert "在吗" in await stored_texts(postgres_dsn, f"greywind_{BOB}")
    assert await stored_texts(postgres_dsn, "public") == []
    assert alice.stop() == 0
    assert bob.stop() == 0
    assert await leases(postgres_dsn) == {}
    assert own_errors(alice) == []
    assert own_errors(bob) == []
