"""An implementation that sends but answers the send calls late, through the real ``bot.py``.

It reports each of the bot's messages back at once, and answers the call only after the bot's
``send_timeout_ms``. The report says the part went out, whichever way it comes: an echo (a group
message from the bot's own account) or a ``message_sent`` event. The reply's other parts follow, each
sent once. Without it the bot cannot tell, and stops rather than risk a part read twice.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartBot
from tests.e2e.live import connected_peer, reply_call
from tests.e2e.onebot_peer import ApiCall, OneBotPeer
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
PERSON = 601
GROUP = 800_501
SPLIT_AT = 20
ANSWER = "明天下午三点在二号会议室开会，大家别迟到。记得带上上周的季度报表和笔记本电脑。会后一起去吃饭。"
CONFIG = f"""
[bot]
split_at = {SPLIT_AT}

[budget.forced]
min_interval_ms = 0

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 200
send_timeout_ms = 600
"""


def in_group(call: ApiCall) -> bool:
    return call.action == "send_group_msg" and call.params.get("group_id") == GROUP


async def echo_each_send(peer: OneBotPeer, *, report: str | None, within: float) -> list[str]:
    """The texts the bot sends to the group, each reported back at once as an event of ``report``'s
    ``post_type`` (none when None); ends when the bot has sent nothing for ``within`` seconds."""
    texts: list[str] = []
    after = 0
    while True:
        try:
            call = await peer.wait_for_call(predicate=in_group, after=after, within=within)
        except TimeoutError:
            return texts
        after = peer.calls.index(call) + 1
        texts.append(call.text)
        if report is not None:
            # The part as sent, its quote included: the adapter asks the slow platform (get_msg)
            # about a quoted message before anything else hears the event.
            event = ob.group_message(
                self_id=SELF_ID,
                group_id=GROUP,
                user_id=SELF_ID,
                message=[dict(segment) for segment in call.segments],
                message_id=int(call.answer["data"]["message_id"]),
            )
            await peer.post({**event, "post_type": report})


@pytest.mark.parametrize(
    "report", ["message", "message_sent", None], ids=["echoed", "reported", "not-reported"]
)
async def test_a_reply_whose_sends_are_answered_late_goes_out_whole_when_the_echoes_come_back(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer, report: str | None
) -> None:
    openai_server.load({"default": reply_call(ANSWER)})
    bot = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        peer.answer_delay = 2.0  # past send_timeout_ms: every send call times out
        await peer.say_in_group(GROUP, PERSON, ob.at(SELF_ID), " 明天几点开会？")
        sent = await echo_each_send(peer, report=report, within=8.0)
    if report is not None:
        assert len(sent) >= 3, sent  # split in parts of about SPLIT_AT characters
        assert "".join(sent) == ANSWER  # every part, once, in order
    else:
        # The first part may have gone out: not sent again, and the rest held back.
        assert len(sent) == 1, sent
        assert ANSWER.startswith(sent[0])
