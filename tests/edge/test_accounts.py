"""Chat owners: which account a chat's sends go through, learned from events and kept across restarts."""

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


@pytest.mark.anyio
async def test_each_chat_is_sent_through_its_own_account_and_waits_for_it(tmp_path: Path) -> None:
    edge = build_edge(tmp_path)
    bot_a, bot_b = FakeBot(), FakeBot()
    edge.bot_connected(str(A), bot_a)
    edge.bot_connected(str(B), bot_b)
    await edge.start()
    try:
        await _deliver(edge, A, 1001)
        await _deliver(edge, B, 1002)
        await _deliver(edge, A, 1002)  # the second account in the same group: the first keeps it
        assert (await edge.outbound.send("group:1001", "to a")).sent
        assert (await edge.outbound.send("group:1002", "to b")).sent
        assert bot_a.texts() == ["to a"]
        assert bot_b.texts() == ["to b"]

        edge.bot_disconnected(str(B))
        result = await edge.outbound.send("group:1002", "waits for b")
        assert result.reason == "no_connection"
        assert bot_a.texts() == ["to a"]  # never borrowed
        assert (await edge.outbound.send("group:1001", "a still sends")).sent
        # A chat no account has delivered yet: through the only account connected, else nowhere.
        assert (await edge.outbound.send("group:1003", "only a")).sent
        edge.bot_connected(str(B), bot_b)
        assert (await edge.outbound.send("group:1004", "ambiguous")).reason == "no_connection"
        assert "10001（1 个聊天）" in edge.status_text()
    finally:
        await edge.stop()

    restarted = build_edge(tmp_path)
    assert restarted.owners.owner("group:1002") == str(B)


@pytest.mark.anyio
async def test_a_ban_of_another_account_in_a_chat_does_not_silence_its_owner(tmp_path: Path) -> None:
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
        assert edge.outbound.gate("group:1001").open
        ban_a = ob.group_ban(self_id=A, group_id=1001, user_id=A, duration=600)
        await edge.handle_notice(parse(ban_a))  # type: ignore[arg-type]
        assert edge.outbound.gate("group:1001").reason == "muted"
    finally:
        await edge.stop()
