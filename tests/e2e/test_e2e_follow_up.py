"""A follow-up in the real process: the scripted model (over HTTP) calls ``follow_up`` while answering
an @-mention, the promise is kept in the SQLite store, and when it is due the LifeDirector's tick
proposes it with follow-up grounds; the model, cued with what it was to come back to, speaks into
the group over the OneBot WebSocket without anyone asking again."""

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
GROUP = 800_950

CONFIG = """
[budget]
min_interval_ms = 1000

[life]
enabled = true
tick_ms = 1000
quiet_hours = ""
"""


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


SCRIPT = {
    "rules": [
        {"when": {"contains": "回来跟进：“末班车几点”"}, "reply": call("reply", text="查到了：末班车 23:10")},
        {
            "when": {"contains": "末班车几点开"},
            "reply": call("follow_up", about="末班车几点", delay_minutes=0.1),
            "times": 1,
        },
        {
            "when": {"contains": "末班车几点开"},
            "reply": call("reply", text="我查一下，晚点告诉你"),
            "times": 1,
        },
    ],
    "default": call("observe", reason="先不说"),
}


async def test_the_model_promises_a_follow_up_and_the_bot_comes_back_to_it_by_itself(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(SCRIPT) as model:
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
                await peer.say_in_group(GROUP, 701, ob.at(SELF_ID), " 末班车几点开？")
                promised = await peer.wait_for_call("send_group_msg", within=15)
                assert promised.text == "我查一下，晚点告诉你"
                sent = len(peer.calls)
                came_back = await peer.wait_for_call("send_group_msg", within=30, after=sent)
                assert came_back.text == "查到了：末班车 23:10"
                await bot.await_log("proactive_outcome", within=10)
            assert bot.stop(timeout=10) == 0
        finally:
            with contextlib.suppress(Exception):
                bot.stop(timeout=3)
            bot.kill()
        cued = [r for r in model.chat_requests if "回来跟进：“末班车几点”" in r.last_user_text]
        assert len(cued) == 1
    records = bot.records()
    scheduled = [r for r in records if r.get("event") == "proactive_scheduled"]
    assert [(r["source"], r["grounds"]) for r in scheduled] == [("life_source:follow_ups", "follow_up")]
    (outcome,) = [r for r in records if r.get("event") == "proactive_outcome"]
    assert outcome["spoke"] is True
    assert outcome["grounds"] == "follow_up"
    assert own_errors(bot) == []
