"""The real bot with its garbage collector tuned after start-up: start-up's objects frozen out of the
collector's walks, higher thresholds. The bot still answers, and still stops cleanly."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import StartBot
from tests.e2e.live import connected_peer
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
GROUP = 880_001


async def test_start_up_is_frozen_and_the_bot_still_answers_and_stops_cleanly(start_bot: StartBot) -> None:
    with ScriptedOpenAIServer({"default": {"text": "好的"}}) as model:
        bot = start_bot(model=model, config="[outbound]\nmax_per_minute = 600\nburst = 100\n")
        started = (await bot.await_log("edge_started", within=20))[0]
        # NoneBot, pydantic's schemas, the runtime: far more than a handful of objects.
        assert started["frozen_objects"] > 50_000
        async with connected_peer(bot, self_id=SELF_ID) as peer:
            for n in range(30):
                await peer.say_in_group(GROUP, 500 + n % 3, f"闲聊第{n}句")
            await peer.say_in_group(GROUP, 501, ob.at(SELF_ID), " 在吗")
            call = await peer.wait_for_call("send_group_msg", within=20)
            assert call.text == "好的"
        assert bot.stop() == 0
    stopped = [r for r in bot.records() if r.get("event") == "edge_stopped"]
    assert stopped
    assert stopped[0]["messages"] == 31
    assert not [r for r in bot.records() if r.get("level") in ("error", "critical")]
