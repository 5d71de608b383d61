"""Extensions in the real process: the example distribution (``examples/greywind-dice``, installed
by ``make``) is found through its entry point and answers a member's ``/roll``; a broken module and a
raising listener named in the config cost nothing but themselves."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.conftest import TEST_API_KEY
from tests.e2e.live import connected_peer, own_errors
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
GROUP = 800_901

CONFIG = """
[extensions]
modules = ["tests.extensions.samples.broken_import", "tests.extensions.samples.bad:raising_listener"]
"""


async def test_an_installed_extension_answers_and_a_broken_one_costs_only_itself(tmp_path: Path) -> None:
    with ScriptedOpenAIServer({"default": {"text": "在的"}}) as model:
        bot = BotProcess(
            tmp_path,
            config=CONFIG,
            env={
                "GREYWIND_LLM_BASE_URL": model.base_url,
                "GREYWIND_LLM_MODEL": "scripted",
                "GREYWIND_LLM_API_KEY": TEST_API_KEY,
            },
        ).start()
        try:
            async with connected_peer(bot, self_id=SELF_ID) as peer:
                await peer.say_in_group(GROUP, 700, "/roll 2d6")
                rolled = await peer.wait_for_call("send_group_msg", within=10)
                assert re.fullmatch(r"700 掷出 2d6 = \d+（\d\+\d）", rolled.text)
                sent = len(peer.calls)
                await peer.say_in_group(GROUP, 701, ob.at(SELF_ID), " 在吗")
                answered = await peer.wait_for_call("send_group_msg", within=10, after=sent)
                assert answered.text == "在的"
                await bot.await_log("listener_failed", within=5)
            assert bot.stop(timeout=10) == 0
        finally:
            with contextlib.suppress(Exception):
                bot.stop(timeout=3)
            bot.kill()
    records = bot.records()
    (loaded,) = [r for r in records if r.get("event") == "extensions_loaded"]
    assert "dice" in loaded["loaded"]
    assert "guess_number" in loaded["loaded"]
    refused = [r for r in own_errors(bot) if r.get("event") == "extension_refused"]
    assert [r["extension"] for r in refused] == ["tests.extensions.samples.broken_import"]
    assert [r for r in own_errors(bot) if r.get("event") != "extension_refused"] == []
    failed = [r for r in records if r.get("event") == "listener_failed"]
    assert {r["extension"] for r in failed} == {"raising_listener"}
