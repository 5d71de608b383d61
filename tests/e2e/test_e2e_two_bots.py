"""Two bots in one group, through the real ``bot.py``: another account answers every message of ours
within a second (quoting it, @-ing us). The exchange ends after a few turns; the bot's own messages,
echoed back as group messages and as ``message_sent`` reports, never start anything."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.e2e.conftest import StartBot
from tests.e2e.live import connected_peer, reply_call
from tests.e2e.onebot_peer import OneBotPeer
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
OTHER_BOT = 20_002
PERSON = 601
GROUP = 800_401
DETECT_RUNS = 3
MAX_TURNS = 2
CONFIG = f"""
[budget.forced]
min_interval_ms = 0
max_per_window = 100
window_ms = 600000

[scheduling]
high_delay_ms = 200
medium_delay_ms = 300

[bots]
detect_runs = {DETECT_RUNS}
max_turns = {MAX_TURNS}

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 200
"""


def sent_in_group(peer: OneBotPeer) -> list[Any]:
    return [call for call in peer.sends() if call.params.get("group_id") == GROUP]


def echo_of(call: Any, *, post_type: str) -> dict[str, Any]:
    """The bot's own send as the implementation reports it back: a group message from its own id (an
    echo) or a ``message_sent`` event. It @s the bot, which would call for an answer from anyone else."""
    event = ob.group_message(
        self_id=SELF_ID,
        group_id=GROUP,
        user_id=SELF_ID,
        message=[ob.at(SELF_ID), ob.text(" " + call.text + " 对吧？")],
        message_id=int(call.answer["data"]["message_id"]),
    )
    return {**event, "post_type": post_type}


# The implementation confirms each send at once, or late: then the other bot's answer (and our echo)
# comes before the confirmation, and the answer is still timed from when the bot spoke.
@pytest.mark.parametrize("confirm_after", [0.0, 0.3], ids=["confirmed-at-once", "confirmed-late"])
async def test_an_instant_answering_bot_gets_a_few_turns_and_own_echoes_trigger_nothing(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer, confirm_after: float
) -> None:
    openai_server.load({"default": reply_call("嗯嗯，我在")})
    bot = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        peer.answer_delay = confirm_after
        await peer.say_in_group(GROUP, PERSON, ob.at(SELF_ID), " 你好呀")
        answered = 0
        for turn in range(20):
            try:
                call = await peer.wait_for_call(
                    predicate=lambda c: c.action == "send_group_msg" and c.params.get("group_id") == GROUP,
                    after=answered,
                    within=6.0,
                )
            except TimeoutError:
                break  # the bot said nothing more: the exchange is over
            answered = peer.calls.index(call) + 1
            # Our message comes back as an echo and as message_sent; the other bot answers it at once.
            await peer.post(echo_of(call, post_type="message"))
            await peer.post(echo_of(call, post_type="message_sent"))
            await peer.say_in_group(
                GROUP,
                OTHER_BOT,
                ob.reply(call.answer["data"]["message_id"]),
                ob.at(SELF_ID),
                f" 收到你的消息啦 {turn}",
            )
        sends = sent_in_group(peer)
        # one answer to the person; the other bot's first DETECT_RUNS - 1 instant answers look like a
        # person's, the next makes it a bot; MAX_TURNS bot turns are answered; then nothing
        assert len(sends) == 1 + (DETECT_RUNS - 1) + MAX_TURNS, [c.text for c in sends]
        # The bot's own message on its own, @-ing it, as echo and as message_sent: no model call.
        requests = len(openai_server.chat_requests)
        await peer.post(echo_of(sends[-1], post_type="message"))
        await peer.post(echo_of(sends[-1], post_type="message_sent"))
        await asyncio.sleep(2.0)
        assert len(openai_server.chat_requests) == requests
        assert len(sent_in_group(peer)) == len(sends)
        # A person speaks: the bot answers again.
        before = len(peer.calls)
        await peer.say_in_group(GROUP, PERSON, ob.at(SELF_ID), " 你们俩聊完了？")
        await peer.wait_for_call("send_group_msg", after=before, within=10.0)
    assert bot.stop() == 0
