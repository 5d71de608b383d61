"""The bot's own messages reported back, read from the raw frame as the frame guard reads it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from plugins.greywind.onebot_guard import FrameGuard
from plugins.greywind.own_messages import OwnReport, own_report
from tests.edge.test_onebot_guard import FakeSocket, event, make
from tests.support import onebot_events as ob

SELF = 10
GROUP_CHAT = f"qq:{SELF}:group:2"


def mine(message: list[ob.Segment] | str, **kw: Any) -> dict[str, Any]:
    return ob.group_message(self_id=SELF, group_id=2, user_id=SELF, message=message, message_id=77, **kw)


@pytest.mark.parametrize(
    ("frame", "report"),
    [
        # An echo of a part as the outbound sends it: the quote, then one text segment.
        (mine([ob.reply(5), ob.text("明天三点开会")]), OwnReport(GROUP_CHAT, "77", "明天三点开会")),
        ({**mine([ob.text("好")]), "post_type": "message_sent"}, OwnReport(GROUP_CHAT, "77", "好")),
        # The string format: CQ codes dropped, the text unescaped as the adapter does.
        (mine("[CQ:reply,id=5]数组&#91;0&#93;就行"), OwnReport(GROUP_CHAT, "77", "数组[0]就行")),
        # A private one: its chat is the person it went to.
        (
            {
                **ob.private_message(self_id=SELF, user_id=SELF, message=[ob.text("hi")], message_id=8),
                "target_id": 42,
            },
            OwnReport(f"qq:{SELF}:private:42", "8", "hi"),
        ),
        # A private one that names nobody: no chat to hear it in.
        (ob.private_message(self_id=SELF, user_id=SELF, message=[ob.text("hi")], message_id=8), None),
        # Someone else's message, notices, broken frames: nothing.
        (ob.group_message(self_id=SELF, group_id=2, user_id=3, message=[ob.text("好")]), None),
        (ob.poke(self_id=SELF, user_id=3, target_id=SELF, group_id=2), None),
        ({"post_type": "message_sent", "self_id": SELF, "message_type": "group", "group_id": 2}, None),
        ({**mine([ob.text("好")]), "group_id": "a:b"}, None),
        (
            {**mine([]), "message": [None, 3, {"type": "text", "data": None}, ob.text("好")]},
            OwnReport(GROUP_CHAT, "77", "好"),
        ),
    ],
)
def test_a_report_of_the_bots_own_message_is_read_from_the_frame(
    frame: dict[str, Any], report: OwnReport | None
) -> None:
    assert own_report(frame) == report


@pytest.mark.anyio
async def test_the_guard_hands_the_outbound_each_own_message_as_it_reads_it_even_while_events_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NoneBot may take seconds to hand the event over (it asks the platform about the quoted
    message first); the outbound decides at the send's timeout whether to send a part again."""
    heard: list[tuple[Any, float]] = []
    monkeypatch.setattr(
        FrameGuard, "on_own_message", lambda frame, at: heard.append((frame["message_id"], at))
    )
    monkeypatch.setattr(FrameGuard, "clock", lambda: 123.0)
    ws = FakeSocket()
    in_flight: set[Any] = {object(), object(), object()}  # every handler busy: events wait
    guard = make(ws, in_flight, [], limit=1)
    ws.feed(event(1), json.dumps(mine([ob.reply(1), ob.text("好")])), event(2))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(guard.receive(), 0.05)
    assert heard == [(77, 123.0)]
    await guard.aclose()
