"""Recall, ban and removal notices: what they mean for the runtime and for the send gates."""

from __future__ import annotations

from nonebot.adapters.onebot.v11 import NoticeEvent

from plugins.greywind.notices import (
    BotMuted,
    BotRemoved,
    BotUnmuted,
    Recalled,
    apply_to_gates,
    interpret_notice,
)
from plugins.greywind.outbound import ChatGates
from tests.edge.helpers import GROUP, SELF_ID, parse
from tests.support import onebot_events as ob

NOW = 5_000.0


def interpret(payload: dict[str, object]) -> object:
    event = parse(payload)
    assert isinstance(event, NoticeEvent)
    return interpret_notice(event, str(SELF_ID), now=NOW)


def test_group_recall_names_the_message() -> None:
    notice = interpret(
        ob.group_recall(self_id=SELF_ID, group_id=GROUP, user_id=42, message_id=77, operator_id=1)
    )
    assert notice == Recalled(f"qq:{SELF_ID}:group:{GROUP}", "77", "1", NOW)


def test_friend_recall_lands_in_the_private_chat() -> None:
    payload = ob.notice("friend_recall", self_id=SELF_ID, user_id=42, message_id=78)
    assert interpret(payload) == Recalled(f"qq:{SELF_ID}:private:42", "78", "42", NOW)


def test_a_ban_of_the_bot_closes_the_group_for_its_duration() -> None:
    notice = interpret(ob.group_ban(self_id=SELF_ID, group_id=GROUP, user_id=SELF_ID, duration=600))
    assert isinstance(notice, BotMuted)
    assert notice.until == NOW + 600
    gates = ChatGates()
    apply_to_gates(notice, gates)
    assert gates.verdict(f"qq:{SELF_ID}:group:{GROUP}", NOW + 599).reason == "muted"
    assert gates.verdict(f"qq:{SELF_ID}:group:{GROUP}", NOW + 600).open


def test_lifting_the_ban_opens_the_group() -> None:
    gates = ChatGates()
    banned = interpret(ob.group_ban(self_id=SELF_ID, group_id=GROUP, user_id=SELF_ID, duration=86_400))
    lifted = interpret(ob.group_ban(self_id=SELF_ID, group_id=GROUP, user_id=SELF_ID, duration=0, lift=True))
    assert isinstance(banned, BotMuted)
    assert isinstance(lifted, BotUnmuted)
    apply_to_gates(banned, gates)
    apply_to_gates(lifted, gates)
    assert gates.verdict(f"qq:{SELF_ID}:group:{GROUP}", NOW).open


def test_a_whole_group_ban_silences_the_bot_until_lifted() -> None:
    notice = interpret(ob.group_ban(self_id=SELF_ID, group_id=GROUP, user_id=0, duration=0))
    assert isinstance(notice, BotMuted)
    assert notice.whole_group
    assert notice.until is None


def test_a_ban_of_someone_else_means_nothing_to_the_bot() -> None:
    assert interpret(ob.group_ban(self_id=SELF_ID, group_id=GROUP, user_id=42, duration=600)) is None


def test_the_bot_kicked_keeps_the_group_closed() -> None:
    payload = ob.notice(
        "group_decrease", self_id=SELF_ID, sub_type="kick_me", group_id=GROUP, user_id=SELF_ID, operator_id=1
    )
    notice = interpret(payload)
    assert isinstance(notice, BotRemoved)
    gates = ChatGates()
    apply_to_gates(notice, gates)
    assert gates.verdict(f"qq:{SELF_ID}:group:{GROUP}", 10**12).reason == "muted"


def test_unrelated_notices_are_none() -> None:
    payload = ob.notice(
        "group_increase", self_id=SELF_ID, sub_type="approve", group_id=GROUP, user_id=42, operator_id=1
    )
    assert interpret(payload) is None
