"""Settings a user may well choose, with the real process: the bot stays responsive and keeps to them."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.conftest import TEST_API_KEY
from tests.e2e.live import connected_peer, own_errors
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
ADMIN = 4_242


async def test_no_minimum_interval_between_unprompted_replies_keeps_the_bot_responsive(
    tmp_path: Path,
) -> None:
    config = """
[budget]
min_interval_ms = 0

[scheduling]
high_delay_ms = 100
medium_delay_ms = 100
supersede = "none"
"""
    with ScriptedOpenAIServer({"default": {"text": "嗯，我觉得可以"}}) as model:
        bot = BotProcess(
            tmp_path,
            config=config,
            env={
                "GREYWIND_LLM_BASE_URL": model.base_url,
                "GREYWIND_LLM_MODEL": "scripted",
                "GREYWIND_LLM_API_KEY": TEST_API_KEY,
                "SUPERUSERS": f'["{ADMIN}"]',
            },
        ).start()
        try:
            async with connected_peer(bot, self_id=SELF_ID) as peer:
                # Questions about the bot from several people: each worth joining, none addressed.
                for n in range(5):
                    await peer.say_in_group(800_301, 700 + n, f"这事灰风怎么看？我是第{n}个问的")
                await peer.post(
                    ob.private_message(self_id=SELF_ID, user_id=ADMIN, message=[ob.text("/status")])
                )
                await peer.wait_for_call("send_private_msg", within=5)
                await peer.wait_for_call("send_group_msg", within=5)
            # A wedged loop never exits; a healthy one within the stop's 10 s grace, however busy.
            assert bot.stop(timeout=12) == 0
            assert own_errors(bot) == []
        finally:
            with contextlib.suppress(Exception):
                bot.stop(timeout=3)
            bot.kill()


async def test_the_account_wide_send_rate_holds_across_groups_and_every_answer_still_goes_out(
    tmp_path: Path,
) -> None:
    # One send a second after a burst of two, for the whole account (QQ restricts accounts that
    # send too fast); budgets per group would allow all of them at once.
    config = """
[outbound]
max_per_minute = 60
burst = 2
"""
    groups = [800_401 + n for n in range(5)]
    with ScriptedOpenAIServer({"default": {"text": "收到"}}) as model:
        bot = BotProcess(
            tmp_path,
            config=config,
            env={
                "GREYWIND_LLM_BASE_URL": model.base_url,
                "GREYWIND_LLM_MODEL": "scripted",
                "GREYWIND_LLM_API_KEY": TEST_API_KEY,
            },
        ).start()
        try:
            async with connected_peer(bot, self_id=SELF_ID) as peer:
                for n, group in enumerate(groups):
                    await peer.say_in_group(group, 900 + n, ob.at(SELF_ID), " 在吗")
                for group in groups:
                    await peer.wait_for_call(
                        "send_group_msg", lambda c, g=group: c.params["group_id"] == g, within=15
                    )
                times = sorted(call.at for call in peer.sends())
            assert len(times) == len(groups)
            # Two at once, then one per second: the fifth no sooner than three seconds after the first.
            # These are the peer's receive times, which can lag the bucket's slots by a busy moment of
            # the machine (0.815 s for a 1 s slot was seen once): a quarter second of slack. Without
            # the account's bucket all five go out within a tenth of a second.
            assert times[2] - times[0] >= 0.75
            assert times[4] - times[0] >= 2.75
            assert bot.stop() == 0
            assert own_errors(bot) == []
        finally:
            with contextlib.suppress(Exception):
                bot.stop(timeout=3)
            bot.kill()
