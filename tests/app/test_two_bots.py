"""Two bots in one group: the other one answers every message of ours at once; the exchange ends after
a few turns, and the bot's own messages, echoed back, never start anything."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from runtime.ports.outbound import SentRecord
from tests.app.conftest import SELF_ID, Harness, make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

OTHER_BOT = "20002"


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


async def exchange(h: Harness, rounds: int) -> int:
    """A person asks the bot once; then, for ``rounds`` rounds, every new message of ours is answered
    by the other bot within a second (quoting it, so it is addressed to us). How many we sent."""
    await h.say("灰风 你好呀", addressed=True, sender="42", name="阿明")
    await h.settle()
    seen = 0
    for index in range(rounds):
        waited = 0.0
        while len(h.outbound.sent) == seen and waited < 20:
            await h.advance(0.5)  # the clock moves on as it would while the bot thinks
            waited += 0.5
        if len(h.outbound.sent) == seen:
            break  # we said nothing more: the exchange is over
        seen = len(h.outbound.sent)
        h.clock.advance(0.3)
        await h.say(
            f"收到你的消息啦 {index}",
            sender=OTHER_BOT,
            name="小机器人",
            addressed=True,
            reply_to=h.outbound.sent[-1].message_id,
        )
    await h.advance(60)
    return len(h.outbound.sent)


async def test_a_bot_that_answers_everything_instantly_is_detected_and_the_exchange_ends(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("嗯嗯")})
    config = make_config(openai_server)  # no [bots] ids: it is told apart by how it behaves
    async with running(config, data_dir) as h:
        sent = await exchange(h, rounds=20)
        # one answer to the person; the other bot's first 5 fast answers still look like a person's
        # (detect_runs = 6), then max_turns = 2 more bot turns are answered, and nothing after
        assert sent == 1 + 5 + 2
        assert h.runtime.bot.core.kernel.bots.is_bot(OTHER_BOT)
        latest = await h.runtime.control.why("group:500", None)
        assert "机器人对话" in latest


async def test_a_listed_bot_gets_max_turns_answers_until_a_person_speaks(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("嗯嗯")})
    config = make_config(openai_server, bots={"ids": [int(OTHER_BOT)], "max_turns": 1})
    async with running(config, data_dir) as h:
        assert await exchange(h, rounds=10) == 1 + 1
        # a person speaks: the other bot may be answered once more
        await h.say("哈哈你们俩", sender="43", name="小红")
        await h.advance(10)
        before = len(h.outbound.sent)
        await h.say("@灰风 在吗", sender=OTHER_BOT, addressed=True)
        await h.advance(10)
        assert len(h.outbound.sent) == before + 1


async def test_an_account_the_composition_root_adds_is_a_bot_from_its_first_message(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("嗯嗯")})
    async with running(make_config(openai_server, bots={"max_turns": 0}), data_dir) as h:
        h.runtime.bot.core.kernel.bots.add_known([OTHER_BOT])  # another account of this process
        await h.say("@灰风 在吗", sender=OTHER_BOT, addressed=True)
        await h.advance(30)
        assert h.outbound.sent == []
    assert openai_server.chat_requests == []


async def test_the_bots_own_messages_echoed_back_never_trigger_anything(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("不该出现")})
    async with running(make_config(openai_server), data_dir) as h:
        for index in range(5):
            own = h.message(f"灰风 我自己说的第{index}句？", sender=SELF_ID, addressed=True)
            await h.runtime.on_message(replace(own, from_self=True, addressed=False))
            await h.advance(20)
        assert h.outbound.sent == []
        # the chat is not made "live" by the bot talking into it
        assert h.runtime.bot.core.activity.last_activity("group:500") is None
    assert openai_server.chat_requests == []


async def test_another_bots_messages_keep_no_chat_alive(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    async with running(make_config(openai_server, bots={"ids": [OTHER_BOT]}), data_dir) as h:
        await h.say("定时播报：今天晴", sender=OTHER_BOT)
        assert h.runtime.bot.core.activity.last_activity("group:500") is None
        await h.say("好耶", sender="42")
        assert h.runtime.bot.core.activity.last_activity("group:500") == h.clock()


async def test_the_model_cannot_make_the_bot_quote_its_own_message(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(reply("第一句"))
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("灰风 说点什么", addressed=True)
        await h.settle()
        own = h.outbound.sent[0].message_id
        quoting_itself = {
            "tool_calls": [{"name": "reply", "arguments": {"text": "接着说", "quote": f"#{own}"}}]
        }
        openai_server.push(quoting_itself)
        openai_server.push(reply("换个说法"))
        asked = await h.say("灰风 然后呢", addressed=True)
        await h.advance(10)
        assert h.outbound.texts() == ["第一句", "换个说法"]
        assert h.outbound.sent[1].reply_to == asked.message_id  # the person's message, never its own
    told = openai_server.chat_requests[-1].all_text
    assert "your own message" in told


async def test_another_bots_unanswered_question_is_never_followed_up(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": {"tool_calls": [{"name": "observe", "arguments": {"reason": "机器人"}}]}})
    config = make_config(
        openai_server,
        bots={"ids": [OTHER_BOT]},
        life={"enabled": True, "quiet_hours": "", "follow_up_after_ms": 60_000},
    )
    async with running(config, data_dir) as h:
        await h.say("@灰风 你是谁？", sender=OTHER_BOT, addressed=True)
        await h.say("@灰风 你会下棋吗？", sender="42", addressed=True, chat="group:501")
        await h.advance(120)
        assert h.runtime.bot.core.questions.pending("group:500") is None
        assert h.runtime.bot.core.questions.pending("group:501") is not None


async def test_an_echo_heard_before_the_send_is_confirmed_is_one_message(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    # An implementation may report the bot's own message (an echo, ``message_sent``) before it answers
    # the send: the bot then hears its message first and is told it sent it after.
    async with running(make_config(openai_server), data_dir) as h:
        echo = h.message("好的，我记下了", sender=SELF_ID, message_id="900777")
        await h.runtime.on_message(replace(echo, from_self=True))
        h.outbound.confirm(SentRecord("group:500", "好的，我记下了", "900777", h.clock(), None, shadow=False))
        core = h.runtime.bot.core
        assert [m.message_id for m in core.recent.recent("group:500")] == ["900777"]
        threads = core.kernel.threads
        thread = threads.get(threads.thread_of("group:500", "900777") or "")
        assert thread is not None
        assert (thread.message_count, thread.message_ids) == (1, ("900777",))
