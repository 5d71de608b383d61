"""Who gets an answer, what the model is shown, and what happens when the model fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.app.runtime import SELF_SENDER
from tests.app.conftest import make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


async def test_an_at_mention_is_answered_in_the_group_quoting_the_message(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(reply("在的，怎么了？"))
    async with running(make_config(openai_server), data_dir) as h:
        asked = await h.say("灰风 在吗", addressed=True)
        await h.settle()
        assert h.outbound.texts("group:500") == ["在的，怎么了？"]
        assert h.outbound.sent[0].reply_to == asked.message_id
    request = openai_server.chat_requests[0]
    assert request.last_user_text.endswith("灰风 在吗")
    offered = {tool["function"]["name"] for tool in request.tools or []}
    assert {"reply", "wait", "observe", "expire", "schedule_message", "current_time"} <= offered


async def test_a_private_message_is_answered_and_plain_text_counts_as_a_reply(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push({"text": "灰风: 你好，我在。"})
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("你好", chat="private:42")
        await h.settle()
        assert h.outbound.texts("private:42") == ["你好，我在。"]  # the name prefix is cleaned off


async def test_chatter_nobody_addresses_costs_no_model_call(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("不该出现")})
    chatter = ["早", "吃了吗", "哈哈哈", "今天好冷", "下班了", "[图片]", "666", "晚安"]
    async with running(make_config(openai_server), data_dir) as h:
        for index, text in enumerate(chatter):
            await h.say(text, sender=str(100 + index % 3))
            await h.advance(7)
        await h.advance(600)
        assert h.outbound.sent == []
    assert openai_server.chat_requests == []


async def test_a_reply_chain_keeps_the_other_conversation_out_of_the_packet(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(reply("周六早上出发正好"))
    async with running(make_config(openai_server), data_dir) as h:
        a1 = await h.say("苹果派的配方里黄油要放多少", sender="1", name="小甲")
        b1 = await h.say("周末去爬山吗", sender="3", name="小丙")
        a2 = await h.say("黄油两百克，面粉三百克", sender="2", name="小乙", reply_to=a1.message_id)
        b2 = await h.say("去啊，香山还是八达岭", sender="4", name="小丁", reply_to=b1.message_id)
        await h.say("苹果派烤多久", sender="1", name="小甲", reply_to=a2.message_id)
        b3 = await h.say("香山吧，人少一点", sender="3", name="小丙", reply_to=b2.message_id)
        await h.say("灰风 你觉得几点出发好", sender="4", name="小丁", reply_to=b3.message_id, addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["周六早上出发正好"]
    sent = openai_server.chat_requests[0].all_text
    assert "香山吧，人少一点" in sent
    assert "周末去爬山吗" in sent
    for other in ("苹果派", "黄油", "面粉"):
        assert other not in sent


@pytest.mark.parametrize("failure", [{"status": 500}, {"status": 429, "headers": {"Retry-After": "0"}}])
async def test_a_failing_model_gets_one_graceful_message_and_the_bot_keeps_running(
    openai_server: ScriptedOpenAIServer, data_dir: Path, failure: dict[str, object]
) -> None:
    openai_server.load({"default": failure})
    config = make_config(openai_server)
    async with running(config, data_dir) as h:
        await h.say("灰风 帮我看看", addressed=True)
        await h.settle()
        await h.advance(10)
        await h.say("灰风 还在吗", addressed=True)
        await h.settle()
        # Once per chat per cooldown: the second failure stays silent instead of repeating it.
        assert h.outbound.texts() == [config.runtime.graceful_message]
        openai_server.load({"default": reply("好了，我回来了")})
        await h.advance(config.runtime.graceful_cooldown_ms / 1000 + 1)
        await h.say("灰风 现在呢", addressed=True)
        await h.settle()
        assert h.outbound.texts()[-1] == "好了，我回来了"
        assert h.runtime.driver.statistics().model_failures == 2


async def test_a_forced_reply_that_runs_out_of_time_gets_the_graceful_message(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    """The run's deadline passes while the model is still thinking: whoever asked hears so instead of
    nothing."""
    openai_server.load({"default": {**reply("终于想好了"), "delay": 3.0}})
    config = make_config(openai_server, episodes={"deadline_ms": 1_000})
    async with running(config, data_dir) as h:
        await h.say("灰风 这题怎么做", addressed=True)
        await h.settle()
        assert h.outbound.texts() == [config.runtime.graceful_message]


async def test_without_a_model_the_runtime_decides_and_sends_nothing(data_dir: Path) -> None:
    async with running(make_config(None), data_dir, shadow=True, model=False) as h:
        await h.say("灰风 在吗", addressed=True)
        await h.say("你好", chat="private:7")
        await h.settle()
        assert h.outbound.sent == []
        assert h.runtime.driver.statistics().no_model == 2
        assert "未配置模型" in await h.runtime.control.status(None)


async def test_a_long_conversation_still_fits_a_small_model_window(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("看完了")})
    config = make_config(openai_server)
    small = config.models.providers[0].model_copy(update={"context_window": 8_000})
    config = config.model_copy(update={"models": config.models.model_copy(update={"providers": (small,)})})
    async with running(config, data_dir) as h:
        previous = None
        for index in range(30):
            said = await h.say(
                f"第{index}段：" + "这段话很长，讲了很多细节和来龙去脉。" * 15,
                sender=str(index % 2 + 1),
                reply_to=previous,
            )
            previous = said.message_id
        await h.say("灰风 帮我总结一下上面说的", addressed=True, reply_to=previous)
        await h.settle()
        assert h.outbound.texts() == ["看完了"]  # not the graceful message: the request fit the window


async def test_behind_a_backlog_the_bots_reply_is_dated_on_the_runtimes_time_line(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    """While messages wait at the edge, the runtime's clock is how far the bot has heard, behind the
    edge's own. The bot's reply is dated by the runtime's: the messages heard after it, said before
    it was sent, stay before it (dated by the edge's clock it would sit in their future, and every
    one of them would read as said right after the bot spoke)."""
    openai_server.push(reply("在的"))
    async with running(make_config(openai_server), data_dir) as h:
        h.outbound.clock = lambda: h.clock.now + 30.0  # the edge's clock: 30 s ahead of what was heard
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        assert h.outbound.sent[0].time == h.clock.now + 30.0
        await h.runtime.writer.flush()
        stored = await h.runtime.store.recent_messages("group:500", limit=5)
        assert [(m.text, m.time) for m in stored if m.sender_id == SELF_SENDER] == [("在的", h.clock.now)]
