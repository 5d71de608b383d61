"""A normal stop while the model is thinking: the log says once, calmly, that the episode was cut short,
and the @ that was in flight is answered by the next run instead of being dropped."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.conftest import StartBot
from tests.e2e.live import TaggedModel, connected_peer, reply_text, tag
from tests.support import onebot_events as ob
from tests.support.openai_server import RecordedRequest, ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
GROUP = 800_301
CONFIG = """
[scheduling]
high_delay_ms = 200
medium_delay_ms = 300

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 200
"""


async def test_a_stop_during_a_model_call_is_calm_and_the_mention_is_answered_after_the_restart(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    model = TaggedModel(openai_server)
    slow = {"value": True}

    def answer(_request: RecordedRequest, _nth: int):  # type: ignore[no-untyped-def]
        step = reply_text(f"在的{tag('slow')}")
        return {**step, "delay": 20.0} if slow["value"] else step

    model.on("slow", answer)
    first = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(first, self_id=SELF_ID) as peer:
        await peer.say_in_group(GROUP, 601, ob.at(SELF_ID), f" {tag('slow')}在吗")
        for _ in range(200):
            if model.requests_for("slow"):
                break
            await asyncio.sleep(0.05)
        assert model.requests_for("slow"), "the model call never started"
        assert first.stop() == 0
    # Nothing alarms: the connection closing with the server is said at info, as part of the stop.
    alarming = [r for r in first.records() if r.get("level") in ("warning", "error", "critical")]
    assert alarming == [], alarming
    (gone,) = [r for r in first.records() if r.get("event") == "bot_disconnected"]
    assert gone["level"] == "info"
    assert gone["reason"] == "shutdown"
    (cut,) = [r for r in first.records() if r.get("event") == "episode_cut_by_shutdown"]
    assert cut["level"] == "info"

    slow["value"] = False
    second = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(second, self_id=SELF_ID) as peer:
        answer_call = await peer.wait_for_call("send_group_msg", lambda c: tag("slow") in c.text, within=20)
        assert answer_call.params["group_id"] == GROUP
    assert second.stop() == 0
