"""Which raw event frames take the priority lane, and the lane's turns across chats."""

from __future__ import annotations

import pytest

from plugins.greywind.frame_lanes import (
    ChatterFrames,
    FairFrames,
    LaneRules,
    chat_key,
    is_priority,
    nested_deeper_than,
)
from tests.support import onebot_events as ob

RULES = LaneRules(
    names=("灰风", "greywind"), command_prefix="/", own_message=lambda message_id: message_id == "5"
)


# The bot's own message as a ``message_sent`` report.
SENT = {**ob.group_message(self_id=10, group_id=2, user_id=10, message="好"), "post_type": "message_sent"}


def group(message: list[ob.Segment] | str) -> dict[str, object]:
    return ob.group_message(self_id=10, group_id=2, user_id=3, message=message)


@pytest.mark.parametrize(
    ("event", "priority"),
    [
        (group([ob.text("今天吃什么")]), False),
        (group([ob.at(10), ob.text(" 在吗")]), True),
        (group([ob.at(11), ob.text(" 在吗")]), False),
        (group([ob.reply(5), ob.text("那你说说")]), True),  # a reply to the bot's own message
        (group([ob.reply(6), ob.text("那你说说")]), False),  # a reply to someone else's
        (group([ob.at(11), ob.text(" 灰风你看看")]), True),  # the edge's rule: opens with the name
        (group([ob.text("要不问问灰风？")]), False),  # the name in passing
        (group([ob.text("看"), ob.text("灰风")]), False),
        (group([ob.text("greywinds are cool")]), False),
        (group([ob.text("/status")]), True),
        (group([ob.image(), ob.text("  /why 12")]), True),
        (group([ob.text("看"), ob.text("/status")]), False),
        (group([ob.text("灰风你好")]), True),
        (group("[CQ:at,qq=10] 在吗"), True),
        (group("[CQ:at,qq=100] 在吗"), False),
        (group("[CQ:reply,id=5]嗯"), True),
        (group("[CQ:reply,id=6]嗯"), False),
        (group("[CQ:reply,id=6][CQ:at,qq=11] 灰风你说呢"), True),
        (group("听说灰风也玩"), False),
        (ob.private_message(self_id=10, user_id=3, message=[ob.text("hi")]), True),
        # The bot's own message reported back: chatter (the outbound hears it as the guard reads it).
        (ob.group_message(self_id=10, group_id=2, user_id=10, message=[ob.text("好")]), False),
        (SENT, False),
        (ob.poke(self_id=10, user_id=3, target_id=10, group_id=2), True),
        (ob.poke(self_id=10, user_id=3, target_id=4, group_id=2), False),
        ({"post_type": "meta_event", "meta_event_type": "heartbeat", "self_id": 10}, False),
        ({"post_type": "message", "message": [None, 3, {"type": "at", "data": None}]}, False),
    ],
)
def test_what_asks_for_the_bot_takes_the_priority_lane(event: dict[str, object], priority: bool) -> None:
    assert is_priority(event, RULES) is priority


def test_the_lane_takes_chats_in_turn_and_drops_the_loudest_chats_oldest_frame() -> None:
    lane = FairFrames()
    for n in range(3):
        lane.push("a", f"a{n}")
    lane.push("b", "b0")
    lane.drop_one()
    assert len(lane) == 3
    assert lane.bytes == len("a1") + len("a2") + len("b0")
    assert [lane.pop() for _ in range(3)] == ["a1", "b0", "a2"]
    assert not lane
    assert chat_key({"group_id": 5}) != chat_key({"user_id": 5})


def test_chatter_keeps_arrival_order_and_gives_up_one_chat_at_once() -> None:
    lane = ChatterFrames()
    for frame in ("a0", "b0", "a1", "c0", "b1"):
        lane.push(frame[0], frame)
    assert list(lane.take_chat("a")) == ["a0", "a1"]
    assert list(lane.take_chat("a")) == []
    assert len(lane) == 3
    assert lane.bytes == 6
    lane.push("a", "a2")  # after the take: in line behind what was there
    assert [lane.pop() for _ in range(4)] == ["b0", "c0", "b1", "a2"]
    assert not lane
    lane.push("d", "d0")
    assert lane.pop() == "d0"


def test_nesting_depth_is_measured_only_when_the_brackets_allow_it() -> None:
    shallow = '{"a": [1, 2, {"b": []}]}'
    value = {"a": [1, 2, {"b": []}]}  # four containers deep
    assert not nested_deeper_than(shallow, value, 4)
    assert nested_deeper_than(shallow, value, 3)
    deep_value: object = []
    for _ in range(10):
        deep_value = [deep_value]
    assert nested_deeper_than("[" * 11, deep_value, 10)
    assert not nested_deeper_than("[" * 11, deep_value, 11)
