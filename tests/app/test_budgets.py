"""A flood of messages never becomes a flood of replies: both budgets hold, per chat."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.app.conftest import make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


def max_in_window(times: list[float], window: float) -> int:
    return max((sum(1 for t in times if start <= t < start + window) for start in times), default=0)


async def test_the_normal_budget_holds_under_a_flood_of_interesting_messages(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("我也想吃")})
    config = make_config(openai_server, lexicon={"terms": ["火锅"]})
    policy = config.budget
    async with running(config, data_dir) as h:
        for index in range(180):  # one hour, a message every 20 s
            await h.say("有人吃火锅吗？", sender=str(1000 + index % 7))
            await h.advance(20)
        await h.advance(300)
        times = h.outbound.times
    assert times, "interesting messages are answered sometimes"
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps, default=policy.min_interval_ms / 1000) >= policy.min_interval_ms / 1000
    assert max_in_window(times, policy.window_ms / 1000) <= policy.max_per_window
    # Every model call was made for an activation the budget allowed: no call was wasted on a refusal.
    assert len(openai_server.chat_requests) == len(times)


async def test_the_forced_budget_holds_when_everyone_mentions_the_bot_at_once(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("在")})
    config = make_config(openai_server)
    forced = config.budget.forced
    async with running(config, data_dir) as h:
        for index in range(60):
            await h.say(f"灰风 第{index}个问题", sender=str(2000 + index), addressed=True)
        await h.settle()
        for _ in range(700):
            await h.advance(1)
        times = h.outbound.times
        other = h.outbound.texts("group:600")
        await h.say("灰风 别的群也在吗", chat="group:600", addressed=True)
        await h.settle()
        assert h.outbound.texts("group:600") == [*other, "在"]  # one chat's flood does not silence another
    assert times
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= forced.min_interval_ms / 1000
    assert max_in_window(times, forced.window_ms / 1000) <= forced.max_per_window
    # The mentions the budget could not take were dropped before the model, not after it.
    assert len(openai_server.chat_requests) == len(times) + 1


async def test_past_the_daily_token_cap_only_mentions_reach_the_model(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("我也想吃")})
    config = make_config(openai_server, lexicon={"terms": ["火锅"]}, models={"daily_token_cap_per_chat": 100})
    async with running(config, data_dir) as h:
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        spent = len(openai_server.chat_requests)
        assert spent == 1  # one answer is well over a 100-token cap
        await h.advance(120)
        await h.say("有人吃火锅吗？", sender="7")
        await h.advance(200)
        assert len(openai_server.chat_requests) == spent  # the interesting question is let go
        await h.say("灰风 那你呢", addressed=True)
        await h.settle()
        assert len(openai_server.chat_requests) == spent + 1  # an @ is still answered
        assert h.outbound.texts()[-1] == "我也想吃"
