"""Accounts: a chat's sends go through the account its key names; the record of chats each account heard."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugins.greywind.accounts import OWNERS_FILE, ChatOwners
from tests.edge.helpers import FakeBot, as_adapter_delivers, parse
from tests.edge.test_edge import build_edge
from tests.support import onebot_events as ob

A, B = 10_000, 10_001


def test_the_first_account_keeps_a_chat_and_the_owner_survives_a_reload(tmp_path: Path) -> None:
    path = tmp_path / OWNERS_FILE
    owners = ChatOwners(path)
    assert owners.claim("group:1", "10000")
    assert not owners.claim("group:1", "10001")
    assert not owners.claim("group:1", "10000")
    assert owners.claim("group:2", "10001")
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2  # written only when it changed
    again = ChatOwners(path)
    assert again.owner("group:1") == "10000"
    assert again.owner("group:2") == "10001"
    assert again.chats_per_account() == {"10000": 1, "10001": 1}


def test_a_torn_or_garbled_line_loses_only_itself(tmp_path: Path) -> None:
    path = tmp_path / OWNERS_FILE
    path.write_text(
        '{"chat": "group:1", "account": "10000"}\nnot json\n{"chat": "group:2", "acc', encoding="utf-8"
    )
    owners = ChatOwners(path)
    assert owners.owner("group:1") == "10000"
    assert owners.owner("group:2") is None
    assert owners.claim("group:3", "10001")
    assert ChatOwners(path).owner("group:3") == "10001"


async def _deliver(edge, self_id: int, group: int) -> None:  # type: ignore[no-untyped-def]
    payload = ob.group_message(self_id=self_id, group_id=group, user_id=42, message=[ob.text("hi")])
    await edge.handle_message(await as_adapter_delivers(payload))


def test_the_chats_recorded_before_keys_named_their_account_bind_to_it(tmp_path: Path) -> None:
    path = tmp_path / OWNERS_FILE
    path.write_text(
        '{"chat": "group:1", "account": "10000"}\n{"chat": "private:7", "account": "10001"}\n'
        '{"chat": "qq:10000:group:2", "account": "10000"}\n{"chat": "channel:9", "account": "10000"}\n',
        encoding="utf-8",
    )
    owners = ChatOwners(path)
    assert owners.bindings("qq") == {"group:1": "qq:10000:group:1", "private:7": "qq:10001:private:7"}
    owners.claim("qq:10000:group:1", "10000")  # heard again since, under its key: still one chat
    assert owners.chats_per_account() == {"10000": 3, "10001": 1}


def _key(account: int, group: int) -> str:
    return f"qq:{account}:group:{group}"


@pytest.mark.anyio
async def test_each_chat_is_sent_through_the_account_its_key_names_and_waits_for_it(tmp_path: Path) -> None:
    edge = build_edge(tmp_path)
    bot_a, bot_b = FakeBot(), FakeBot()
    edge.bot_connected(str(A), bot_a)
    edge.bot_connected(str(B), bot_b)
    await edge.start()
    try:
        await _deliver(edge, A, 1001)
        await _deliver(edge, B, 1002)
        await _deliver(edge, A, 1002)  # the second account in the same group: a chat of its own
        assert (await edge.outbound.send(_key(A, 1001), "to a")).sent
        assert (await edge.outbound.send(_key(B, 1002), "to b")).sent
        assert (await edge.outbound.send(_key(A, 1002), "a in b's group")).sent
        assert bot_a.texts() == ["to a", "a in b's group"]
        assert bot_b.texts() == ["to b"]

        edge.bot_disconnected(str(B))
        result = await edge.outbound.send(_key(B, 1002), "waits for b")
        assert result.reason == "no_connection"
        assert bot_a.texts() == ["to a", "a in b's group"]  # never borrowed
        assert (await edge.outbound.send(_key(A, 1001), "a still sends")).sent
        assert (await edge.outbound.send(f"xx:{A}:group:1001", "another platform")).reason == "no_connection"
        # An unbound chat (its account unknown): through the only account connected, else nowhere.
        assert (await edge.outbound.send("group:1003", "only a")).sent
        edge.bot_connected(str(B), bot_b)
        assert (await edge.outbound.send("group:1004", "ambiguous")).reason == "no_connection"
        assert "10000（2 个聊天）" in edge.status_text()
        assert "10001（1 个聊天）" in edge.status_text()
    finally:
        await edge.stop()

    restarted = build_edge(tmp_path)
    assert restarted.owners.chats_per_account() == {str(A): 2, str(B): 1}


@pytest.mark.anyio
async def test_a_ban_of_one_account_in_a_group_does_not_silence_the_other(tmp_path: Path) -> None:
    edge = build_edge(tmp_path)
    bot_a, bot_b = FakeBot(), FakeBot()
    edge.bot_connected(str(A), bot_a)
    edge.bot_connected(str(B), bot_b)
    await edge.start()
    try:
        await _deliver(edge, A, 1001)
        await _deliver(edge, B, 1001)
        ban_b = ob.group_ban(self_id=B, group_id=1001, user_id=B, duration=600)
        await edge.handle_notice(parse(ban_b))  # type: ignore[arg-type]
        assert edge.outbound.gate(_key(A, 1001)).open
        assert edge.outbound.gate(_key(B, 1001)).reason == "muted"
        ban_a = ob.group_ban(self_id=A, group_id=1001, user_id=A, duration=600)
        await edge.handle_notice(parse(ban_a))  # type: ignore[arg-type]
        assert edge.outbound.gate(_key(A, 1001)).reason == "muted"
    finally:
        await edge.stop()
