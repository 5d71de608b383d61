"""The real bot with a model behind it: who gets answered, what the model is shown, what it costs,
how budgets hold under a flood.

One ``bot.py`` process and one scripted model server serve every scenario of this module; each
scenario keeps to its own chats and tags its messages (:mod:`tests.e2e.live`), so the model's answers
and the requests it received can be told apart. The chatter scenario runs first, while nothing else
is going on, so "the model got no request" is exact.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.live import (
    TaggedModel,
    connected_peer,
    quiet_for,
    reply_call,
    reply_text,
    scripted_bot,
    steps,
    tag,
    wait_call,
)
from tests.support import onebot_events as ob

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
ADMIN = 4_242

# Short delays so scheduled activations and waits happen within a test. Small budgets (per chat, so
# each scenario's own chat starts afresh) with no minimum interval, and every scheduled message its own
# activation: under a flood only the budgets stand between the bot and a flood of answers.
FORCED_LIMIT = 3
NORMAL_LIMIT = 2
CONFIG = f"""
[budget]
min_interval_ms = 200
max_per_window = {NORMAL_LIMIT}
window_ms = 600000

[budget.forced]
min_interval_ms = 0
max_per_window = {FORCED_LIMIT}
window_ms = 600000

[scheduling]
high_delay_ms = 200
medium_delay_ms = 300
supersede = "none"
forced_deadline_ms = 3000

[episodes]
min_wait_ms = 1000
wake_delay_ms = 200

[models]
retry_backoff_ms = 50
retry_backoff_cap_ms = 200

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 100
"""


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory, model: TaggedModel) -> Iterator[BotProcess]:
    with scripted_bot(
        tmp_path_factory.mktemp("conversation"),
        model.server,
        config=CONFIG,
        env={"SUPERUSERS": f'["{ADMIN}"]'},
    ) as process:
        yield process


def group_at(group: int, user: int, text: str) -> dict[str, object]:
    return ob.group_message(
        self_id=SELF_ID, group_id=group, user_id=user, message=[ob.at(SELF_ID), ob.text(" " + text)]
    )


def said_in(group: int):  # type: ignore[no-untyped-def]
    return lambda call: call.params.get("group_id") == group


async def test_chatter_nobody_addresses_costs_no_model_call(bot: BotProcess, model: TaggedModel) -> None:
    group = 800_001
    chatter = [
        "今天食堂的面条还行",
        "哈哈哈哈哈",
        "下午三点开会别忘了",
        "我先去拿个快递",
        "这周末降温了",
        "刚买的键盘到了",
        "晚上吃火锅",
        "好的收到",
        "[图片]",
        "笑死我了",
        "地铁今天好挤",
        "明天见",
    ]
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        for n, text in enumerate(chatter):
            await peer.post(
                ob.group_message(
                    self_id=SELF_ID, group_id=group, user_id=301 + n % 4, message=[ob.text(text)]
                )
            )
        # A superuser command goes through the same chat's queue: once it is answered, every chatter
        # message before it has been ingested and decided on.
        await peer.post(
            ob.group_message(self_id=SELF_ID, group_id=group, user_id=ADMIN, message=[ob.text("/status")])
        )
        await peer.wait_for_call("send_group_msg", said_in(group))
        # Past the longest scheduling delay: an activation, had there been one, would have run.
        await asyncio.sleep(1.5)
        assert model.server.chat_requests == []
        assert model.server.requests == []
        assert len(peer.sends()) == 1, [call.text for call in peer.sends()]


async def test_an_at_is_answered(bot: BotProcess, model: TaggedModel) -> None:
    group = 800_002
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        message = group_at(group, 311, f"{tag('at1')}今天周几来着")
        await peer.post(message)
        answer = await peer.wait_for_call("send_group_msg", lambda c: tag("at1") in c.text, within=15)
        assert answer.params["group_id"] == group
        (request,) = model.requests_for("at1")
        assert "今天周几来着" in request.all_text
        assert {tool["function"]["name"] for tool in request.tools or []} >= {
            "reply",
            "wait",
            "observe",
            "expire",
        }


async def test_a_private_message_is_answered(bot: BotProcess, model: TaggedModel) -> None:
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await peer.post(
            ob.private_message(self_id=SELF_ID, user_id=5_001, message=[ob.text(f"{tag('pv1')}你好呀")])
        )
        answer = await peer.wait_for_call("send_private_msg", lambda c: tag("pv1") in c.text, within=15)
        assert answer.params["user_id"] == 5_001
        assert len(model.requests_for("pv1")) == 1


async def test_a_reply_chain_keeps_other_conversations_out_of_the_packet(
    bot: BotProcess, model: TaggedModel
) -> None:
    group, elsewhere = 800_003, 800_004
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        a1 = ob.group_message(
            self_id=SELF_ID, group_id=group, user_id=321, message=[ob.text("猫粮还是买皇家的吧，鸡肉味那款")]
        )
        await peer.post(a1)
        a2 = ob.group_message(
            self_id=SELF_ID,
            group_id=group,
            user_id=322,
            message=[ob.reply(a1["message_id"]), ob.text("皇家鸡肉味我家猫也爱吃")],
        )
        await peer.post(a2)
        b1 = ob.group_message(
            self_id=SELF_ID, group_id=group, user_id=323, message=[ob.text("周末去香山爬山吗，看红叶")]
        )
        await peer.post(b1)
        await peer.post(
            ob.group_message(
                self_id=SELF_ID,
                group_id=group,
                user_id=324,
                message=[ob.reply(b1["message_id"]), ob.text("香山红叶正好，去")],
            )
        )
        await peer.post(
            ob.group_message(
                self_id=SELF_ID, group_id=elsewhere, user_id=325, message=[ob.text("另一个群的暗号是蓝鲸")]
            )
        )
        ask = ob.group_message(
            self_id=SELF_ID,
            group_id=group,
            user_id=321,
            message=[
                ob.reply(a2["message_id"]),
                ob.at(SELF_ID),
                ob.text(f" {tag('chain')}你觉得这款猫粮怎么样"),
            ],
        )
        await peer.post(ask)
        await peer.wait_for_call("send_group_msg", lambda c: tag("chain") in c.text, within=15)

    (request,) = model.requests_for("chain")
    packet = request.all_text
    assert "鸡肉味" in packet, "the conversation being answered is in the packet"
    assert "香山" not in packet, "another conversation of the same group stayed out"
    assert "蓝鲸" not in packet, "another group stayed out"


async def test_wait_then_a_later_message_with_no_new_input(bot: BotProcess, model: TaggedModel) -> None:
    group = 800_005
    model.on("w1", steps(wait_call(2), reply_call(f"想好了{tag('w1')}：周三")))
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        posted = time.monotonic()
        await peer.post(group_at(group, 331, f"{tag('w1')}你想想下次聚会定哪天"))
        answer = await peer.wait_for_call("send_group_msg", lambda c: tag("w1") in c.text, within=20)
        assert answer.text.startswith("想好了")
        assert answer.at - posted >= 1.8, "the answer came after the wait, not at once"
        assert [c for c in peer.sends() if c.params.get("group_id") == group] == [answer]

    first, resumed = model.requests_for("w1")
    assert resumed.at - first.at >= 1.8
    assert "你想想下次聚会定哪天" in resumed.all_text


async def test_a_429_with_retry_after_is_retried_and_answered(bot: BotProcess, model: TaggedModel) -> None:
    group = 800_006
    model.on(
        "busy",
        steps({"status": 429, "headers": {"Retry-After": "1"}}, reply_text(f"刚才忙，现在好了{tag('busy')}")),
    )
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await peer.post(group_at(group, 341, f"{tag('busy')}在吗"))
        answer = await peer.wait_for_call("send_group_msg", lambda c: tag("busy") in c.text, within=20)
        assert answer.params["group_id"] == group
    first, retried = model.requests_for("busy")[:2]
    assert retried.at - first.at >= 0.9, "Retry-After was honoured"
    assert bot.alive


async def test_a_failing_model_gets_a_short_graceful_message_and_the_bot_recovers(
    bot: BotProcess, model: TaggedModel
) -> None:
    group = 800_007
    model.on("down", steps({"status": 500, "error": "upstream exploded: stack trace here"}))
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await peer.post(group_at(group, 351, f"{tag('down')}帮我查一下"))
        graceful = await peer.wait_for_call("send_group_msg", said_in(group), within=20)
        assert 0 < len(graceful.text) <= 60
        for leak in ("500", "exploded", "stack", "Traceback", "error"):
            assert leak not in graceful.text
        assert len(model.requests_for("down")) >= 2, "the model was retried before giving up"

        # The model is back: the next question is answered normally.
        await peer.post(group_at(group, 351, f"{tag('back')}现在呢"))
        await peer.wait_for_call("send_group_msg", lambda c: tag("back") in c.text, within=15)
        assert peer.connected
    assert bot.alive


async def test_malformed_frames_odd_segments_and_a_huge_message_leave_the_bot_answering(
    bot: BotProcess, model: TaggedModel
) -> None:
    group = 800_008
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await peer.post_raw("this is not json {")
        await peer.post_raw(b"\x00\xff binary garbage")
        await peer.post_raw("[1, 2, 3]")
        await peer.post({"post_type": "message"})
        await peer.post({"post_type": "message", "message_type": "group", "self_id": "not-a-number"})
        await peer.post(
            ob.group_message(
                self_id=SELF_ID,
                group_id=group,
                user_id=361,
                message=[
                    ob.at(SELF_ID),
                    ob.segment("hologram", shape="cube"),
                    ob.segment("at"),
                    ob.segment("text"),
                    ob.text(f"{tag('odd')}看这个"),
                ],
            )
        )
        await peer.wait_for_call("send_group_msg", lambda c: tag("odd") in c.text, within=15)

        huge = group_at(group, 362, f"{tag('huge')}" + "长" * 200_000)
        await peer.post(huge)
        await peer.post(
            ob.private_message(self_id=SELF_ID, user_id=5_002, message=[ob.text(f"{tag('after')}还在吗")])
        )
        await peer.wait_for_call("send_private_msg", lambda c: tag("after") in c.text, within=15)
        await peer.wait_for_call("send_group_msg", lambda c: tag("huge") in c.text, within=15)
        assert peer.connected, f"the bot dropped the connection ({peer.close_code} {peer.close_reason})"
    assert bot.alive
    for request in model.requests_for("huge"):
        assert request.all_text.count("长") < 20_000, "the model is not sent a 200,000-character paste"


async def test_forced_budget_holds_under_a_flood_of_mentions(bot: BotProcess, model: TaggedModel) -> None:
    group = 800_101
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        for n in range(30):
            await peer.post(
                ob.group_message(
                    self_id=SELF_ID,
                    group_id=group,
                    user_id=401 + n % 5,
                    message=[ob.at(SELF_ID), ob.text(f" {tag('ff')}第{n}条，快回我")],
                )
            )
        await peer.wait_for_call("send_group_msg", said_in(group), within=15)
        await quiet_for(model.server, 2.0)
        sent = [call for call in peer.sends() if said_in(group)(call)]
    assert 1 <= len(sent) <= FORCED_LIMIT, [call.text for call in sent]
    # Mentions the budget refused are not worth a model call each.
    assert len(model.requests_for("ff")) <= 2 * FORCED_LIMIT


async def test_unprompted_budget_holds_under_a_flood_of_questions_about_the_bot(
    bot: BotProcess, model: TaggedModel
) -> None:
    group = 800_102
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        # The name inside the text and a question: worth joining (direct + question), never forced.
        for n in range(20):
            await peer.post(
                ob.group_message(
                    self_id=SELF_ID,
                    group_id=group,
                    user_id=501 + n,
                    message=[ob.text(f"{tag('nf')}这事灰风怎么看？我是第{n}个问的")],
                )
            )
        await peer.wait_for_call("send_group_msg", said_in(group), within=15)
        await quiet_for(model.server, 2.0)
        sent = [call for call in peer.sends() if said_in(group)(call)]
    assert 1 <= len(sent) <= NORMAL_LIMIT, [call.text for call in sent]


async def test_told_to_be_quiet_the_bot_stays_quiet_until_the_phrase_lifts_it(
    bot: BotProcess, model: TaggedModel
) -> None:
    group = 800_009
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await peer.post(group_at(group, 381, f"{tag('shh')}闭嘴"))
        await peer.post(group_at(group, 382, f"{tag('mq1')}在吗，问你个事"))
        # An /status from the operator in the same chat marks both messages as handled.
        await peer.post(
            ob.group_message(self_id=SELF_ID, group_id=group, user_id=ADMIN, message=[ob.text("/status")])
        )
        await peer.wait_for_call("send_group_msg", lambda c: said_in(group)(c) and "灰风" in c.text)
        await asyncio.sleep(1.0)
        assert [c.text for c in peer.sends() if said_in(group)(c) and "灰风" not in c.text] == []
        assert model.requests_for("shh") == model.requests_for("mq1") == []

        await peer.post(
            ob.group_message(self_id=SELF_ID, group_id=group, user_id=381, message=[ob.text("灰风说话")])
        )
        await peer.post(group_at(group, 382, f"{tag('mq2')}现在可以说了吗"))
        await peer.wait_for_call("send_group_msg", lambda c: tag("mq2") in c.text, within=15)
