"""Accounts: a restricted one pauses alone, and two in one group are two chats.

An account whose sends fail like a restricted (风控) account's is paused, not hammered.

Against the real ``bot.py`` with two accounts connected and the scripted model answering: one account
answers every send with retcode 1200. After ``outbound.restriction_failures`` such failures in a row
its sends pause: nothing more reaches it (the retry included), its chats cost no model call, ``/status``
and the log say so; the other account keeps answering its own chats; once the pause is over one send
probes the account and, answered, ends the pause.

Two accounts in the same group each hear every message there, and each is a chat of its own (the key
carries the account): a question @-ing one account is answered through that account only, never
through the other, and each chat keeps its own threads and speech budget in the store.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

from runtime.store.sqlite import DB_FILENAME
from tests.e2e.conftest import StartBot
from tests.e2e.live import TaggedModel, connected_peer, own_errors, tag
from tests.e2e.onebot_peer import OneBotPeer
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

RESTRICTED_ID = 10_000
HEALTHY_ID = 10_001
ADMIN = 4_242
PAUSE_MS = 6_000
CONFIG = f"""
[scheduling]
high_delay_ms = 200
medium_delay_ms = 300

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 100
restriction_failures = 3
restriction_pause_ms = {PAUSE_MS}
restriction_pause_max_ms = 30000
"""


async def _ask(peer: OneBotPeer, group: int, name: str) -> None:
    await peer.post(
        ob.group_message(
            self_id=peer.self_id,
            group_id=group,
            user_id=601,
            message=[ob.at(peer.self_id), ob.text(f" {tag(name)}在吗")],
        )
    )


async def test_a_restricted_account_pauses_while_the_other_keeps_sending(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    model = TaggedModel(openai_server)  # answers every tagged message with its tag
    bot = start_bot(model=openai_server, config=CONFIG, env={"SUPERUSERS": f'["{ADMIN}"]'})
    async with (
        connected_peer(bot, self_id=RESTRICTED_ID) as restricted,
        connected_peer(bot, self_id=HEALTHY_ID) as healthy,
    ):
        restricted.fail_next("send_group_msg", 1_000)
        await _ask(restricted, 800_701, "x1")  # fails, and its retry fails: two
        await bot.await_log("send_failed", count=2, within=15)
        await _ask(restricted, 800_702, "x2")  # fails once more: the account pauses; no retry
        paused = await bot.await_log("account_paused", within=15)
        paused_at = time.monotonic()
        assert paused[0]["account"] == str(RESTRICTED_ID)
        await bot.await_log("send_refused", lambda r: r.get("reason") == "restricted", within=5)

        # While paused, its chats cost no model call and nothing reaches the account.
        for n in range(3, 8):
            await _ask(restricted, 800_700 + n, f"x{n}")
        # The other account answers its own chat meanwhile, and /status tells the operator.
        await _ask(healthy, 800_711, "h1")
        await healthy.wait_for_call("send_group_msg", lambda c: tag("h1") in c.text, within=15)
        await healthy.say_in_private(ADMIN, "/status")
        status = await healthy.wait_for_call("send_private_msg", within=10)
        assert f"{RESTRICTED_ID}（疑似风控，暂停发送" in status.text
        # A chat of the paused account, named by its key (g800703 would be the healthy one's).
        await healthy.say_in_private(ADMIN, f"/status qq:{RESTRICTED_ID}:group:800703")
        chat_status = await healthy.wait_for_call(
            "send_private_msg", lambda c: f"qq:{RESTRICTED_ID}:group:800703" in c.text, within=10
        )
        assert "不发言：restricted" in chat_status.text
        await asyncio.sleep(1.0)
        assert [n for n in range(3, 8) if model.requests_for(f"x{n}")] == []
        assert len(restricted.sends()) == 3, "a paused account must not be sent to"
        assert time.monotonic() - paused_at < PAUSE_MS / 1000, "the checks above ran inside the pause"

        # The account recovers; after the pause one send probes it and ends the pause.
        restricted.stop_failing("send_group_msg")
        await asyncio.sleep(max(0.0, paused_at + PAUSE_MS / 1000 + 0.5 - time.monotonic()))
        await _ask(restricted, 800_720, "x20")
        await restricted.wait_for_call("send_group_msg", lambda c: tag("x20") in c.text, within=15)
        await bot.await_log("account_resumed", within=5)
        assert len(restricted.sends()) == 4
    assert bot.stop() == 0
    assert own_errors(bot) == []


SHARED_GROUP = 800_750
MEMBER = 602


async def _ask_both(peers: tuple[OneBotPeer, ...], addressee: int, message_id: int, name: str) -> None:
    """One member's message @-ing ``addressee``, delivered (as the platform does) to every account."""
    for peer in peers:
        await peer.post(
            ob.group_message(
                self_id=peer.self_id,
                group_id=SHARED_GROUP,
                user_id=MEMBER,
                message_id=message_id,
                message=[ob.at(addressee), ob.text(f" {tag(name)}在吗")],
            )
        )


async def test_two_accounts_in_one_group_are_two_chats_each_answered_through_itself(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    TaggedModel(openai_server)
    bot = start_bot(model=openai_server, config=CONFIG)
    a_key, b_key = (f"qq:{account}:group:{SHARED_GROUP}" for account in (RESTRICTED_ID, HEALTHY_ID))
    async with (
        connected_peer(bot, self_id=RESTRICTED_ID) as a,
        connected_peer(bot, self_id=HEALTHY_ID) as b,
    ):
        await _ask_both((a, b), RESTRICTED_ID, 9_001, "for_a")
        await a.wait_for_call("send_group_msg", lambda c: tag("for_a") in c.text, within=15)
        await _ask_both((b, a), HEALTHY_ID, 9_002, "for_b")
        await b.wait_for_call("send_group_msg", lambda c: tag("for_b") in c.text, within=15)
        await asyncio.sleep(2.0)  # time for a wrong answer to show up
        assert [c.text for c in a.sends() if tag("for_b") in c.text] == []
        assert [c.text for c in b.sends() if tag("for_a") in c.text] == []
        assert len([c for c in a.sends() if tag("for_a") in c.text]) == 1
        assert len([c for c in b.sends() if tag("for_b") in c.text]) == 1
    assert bot.stop() == 0
    assert own_errors(bot) == []

    db = sqlite3.connect(bot.data_dir / DB_FILENAME)
    try:
        heard = db.execute(
            "SELECT chat_id, COUNT(*), COUNT(DISTINCT thread_id) FROM messages"
            " WHERE from_self = 0 GROUP BY chat_id"
        ).fetchall()
        threads = dict(
            db.execute("SELECT chat_id, GROUP_CONCAT(DISTINCT thread_id) FROM messages GROUP BY chat_id")
        )
        spoke = dict(db.execute("SELECT chat_id, COUNT(*) FROM speech_log GROUP BY chat_id").fetchall())
    finally:
        db.close()
    # Each account heard both questions, in its own chat, under its own threads; each spoke once.
    assert sorted(heard) == [(a_key, 2, 1), (b_key, 2, 1)]
    assert set(threads[a_key].split(",")).isdisjoint(threads[b_key].split(","))
    assert spoke == {a_key: 1, b_key: 1}
