"""The real bot process with a OneBot peer on its reverse WebSocket: start-up, robustness, shutdown.

Two bots serve most scenarios (starting a process is the slow part): ``shadow_bot`` has no model, so it
runs in shadow mode; ``model_bot`` has the scripted model server behind it. Each scenario connects its
own peer and keeps to its own chats. Scenarios that need a fresh process (an access token, shadow mode
from the config, a bad config, counting everything up to SIGTERM) start one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from tests.e2e.bot_process import BotProcess
from tests.e2e.conftest import TEST_API_KEY, StartBot
from tests.e2e.live import connected_peer
from tests.e2e.onebot_peer import OneBotPeer
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
ADMIN = 4_242


def logged_message(message_id: int | str):  # type: ignore[no-untyped-def]
    return lambda record: record.get("message_id") == str(message_id)


def has_hint(record: dict[str, object]) -> bool:
    return "hint" in record


@pytest.fixture(scope="module")
def shadow_bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BotProcess]:
    with BotProcess(tmp_path_factory.mktemp("shadow"), env={"SUPERUSERS": f'["{ADMIN}"]'}) as bot:
        bot.wait_for_log("edge_started")
        yield bot
    assert bot.returncode == 0


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer({"default": {"text": "好的"}}) as server:
        yield server


@pytest.fixture(scope="module")
def model_bot(
    tmp_path_factory: pytest.TempPathFactory, model_server: ScriptedOpenAIServer
) -> Iterator[BotProcess]:
    env = {
        "GREYWIND_LLM_BASE_URL": model_server.base_url,
        "GREYWIND_LLM_MODEL": "scripted",
        "GREYWIND_LLM_API_KEY": TEST_API_KEY,
        "SUPERUSERS": f'["{ADMIN}"]',
    }
    config = "[outbound]\nmax_per_minute = 600\nburst = 100\nretry_delay_ms = 100\n"
    with BotProcess(tmp_path_factory.mktemp("model"), env=env, config=config) as bot:
        bot.wait_for_log("edge_started")
        yield bot
    assert bot.returncode == 0
    assert TEST_API_KEY not in bot.output()


# -- without a model ----------------------------------------------------------------------------


async def test_starts_without_a_model_says_what_to_set_and_sends_nothing(shadow_bot: BotProcess) -> None:
    (hint,) = shadow_bot.wait_for_log("no_model", has_hint)
    assert "GREYWIND_LLM_BASE_URL" in hint["hint"]
    assert "GREYWIND_LLM_MODEL" in hint["hint"]
    assert "shadow mode" in hint["hint"]
    assert shadow_bot.wait_for_log("edge_started")[0]["shadow_mode"] is True
    group = 771_001
    async with connected_peer(shadow_bot, self_id=SELF_ID) as peer:
        mention = await peer.say_in_group(group, 42, ob.at(SELF_ID), " 在吗")
        private = await peer.say_in_private(42, "你好")
        (seen_mention,) = await shadow_bot.await_log("addressed", logged_message(mention))
        (seen_private,) = await shadow_bot.await_log("addressed", logged_message(private))
        assert seen_mention["how"] == "mention"
        assert seen_mention["chat_id"] == f"qq:{SELF_ID}:group:{group}"
        assert seen_private["how"] == "private"
        assert seen_private["chat_id"] == f"qq:{SELF_ID}:private:42"
        assert peer.sends() == [], "shadow mode must not send"
    assert shadow_bot.data_dir.is_dir()


async def test_reply_to_the_bot_is_resolved_through_get_msg(shadow_bot: BotProcess) -> None:
    async with connected_peer(shadow_bot, self_id=SELF_ID) as peer:
        # A message the bot sent earlier, known to the peer's get_msg.
        peer.messages[555] = ob.get_msg_result(
            message_id=555, sender_id=SELF_ID, message=[ob.text("我是灰风")]
        )
        answer = await peer.say_in_group(772_001, 42, ob.reply(555), "那你说说")
        call = await peer.wait_for_call("get_msg")
        assert int(call.params["message_id"]) == 555
        (seen,) = await shadow_bot.await_log("addressed", logged_message(answer))
        assert seen["how"] == "reply"


async def test_malformed_events_unknown_segments_and_a_huge_message_break_nothing(
    shadow_bot: BotProcess,
) -> None:
    group = 773_001
    async with connected_peer(shadow_bot, self_id=SELF_ID) as peer:
        await peer.post_raw("this is not json {")
        await peer.post_raw(b"\x00\xff binary garbage")
        await peer.post_raw("[1, 2, 3]")
        await peer.post({"post_type": "message"})  # no fields at all
        await peer.post({"post_type": "notice", "notice_type": "group_ban", "self_id": SELF_ID, "time": 1})
        await peer.post({"post_type": "message", "message_type": "group", "self_id": "not-a-number"})
        odd = await peer.say_in_group(
            group,
            42,
            ob.at(SELF_ID),
            ob.segment("hologram", shape="cube"),
            ob.segment("at"),
            ob.segment("text"),  # no text at all: the stock adapter would lose the message
            "看这个",
        )
        huge = await peer.say_in_group(group, 43, ob.at(SELF_ID), "长" * 200_000)
        after = await peer.say_in_private(44, "还在吗")

        (seen_odd,) = await shadow_bot.await_log("addressed", logged_message(odd))
        await shadow_bot.await_log("message_truncated", logged_message(huge))
        (seen_huge,) = await shadow_bot.await_log("addressed", logged_message(huge))
        await shadow_bot.await_log("addressed", logged_message(after))
        assert seen_huge["chars"] < 5_000
        assert seen_odd["chars"] > 0
        assert peer.connected, f"the bot dropped the connection ({peer.close_code} {peer.close_reason})"
        assert shadow_bot.alive
        assert shadow_bot.wait_for_log("onebot_frame_not_json", timeout=0, count=2)
        assert shadow_bot.wait_for_log("onebot_segments_repaired", timeout=0)


async def test_superuser_can_ask_for_status_in_private_even_in_shadow_mode(shadow_bot: BotProcess) -> None:
    async with connected_peer(shadow_bot, self_id=SELF_ID) as peer:
        await peer.say_in_private(ADMIN, "/status")
        call = await peer.wait_for_call("send_private_msg")
        assert call.params["user_id"] == ADMIN
        assert "影子模式" in call.text
        # The same command in a group stays unsent: shadow mode holds there.
        shadowed = len(shadow_bot.wait_for_log("shadow_send", timeout=0, count=0))
        await peer.say_in_group(774_001, ADMIN, "/status")
        await shadow_bot.await_log("shadow_send", count=shadowed + 1)
        # (A long status may arrive in several parts, all of them in the private chat.)
        assert {(c.action, c.params.get("user_id")) for c in peer.sends()} == {("send_private_msg", ADMIN)}


async def test_the_whole_bot_status_is_one_short_message_and_full_has_the_figures(
    shadow_bot: BotProcess,
) -> None:
    async with connected_peer(shadow_bot, self_id=SELF_ID) as peer:
        await peer.say_in_private(ADMIN, "/status")
        short = await peer.wait_for_call("send_private_msg")
        await asyncio.sleep(0.5)  # a long answer would arrive in several parts
        marker = len(peer.calls)
        assert len(peer.sends()) == 1
        await peer.say_in_private(ADMIN, "/status full")
        await peer.wait_for_call("send_private_msg", after=marker)
        await asyncio.sleep(0.5)
        sends = peer.sends()
    assert sends[0] is short
    assert "账号：" in short.text
    assert "今日 token：" in short.text
    assert "事件循环延迟" not in short.text
    assert "垃圾回收" not in short.text
    assert "事件循环延迟" in "".join(call.text for call in sends[1:])


# -- with a model ---------------------------------------------------------------------------------


async def test_with_a_model_configured_the_bot_speaks(model_bot: BotProcess) -> None:
    assert model_bot.wait_for_log("edge_started")[0]["shadow_mode"] is False
    group = 775_001
    async with connected_peer(model_bot, self_id=SELF_ID) as peer:
        await peer.say_in_group(group, ADMIN, "/status")
        call = await peer.wait_for_call("send_group_msg", lambda c: c.params.get("group_id") == group)
        assert "正常发言" in call.text


async def test_why_quoting_a_message_explains_it_in_chinese(model_bot: BotProcess) -> None:
    group = 779_001
    async with connected_peer(model_bot, self_id=SELF_ID) as peer:
        asked = await peer.say_in_group(group, 5555, "周末有人去爬山吗")
        await asyncio.sleep(1.0)  # chatter waits behind commands in its chat's turn: let it be heard
        await peer.say_in_group(group, 5555, "今天好热")  # the latest message is another one
        await asyncio.sleep(1.0)
        await peer.say_in_group(group, ADMIN, ob.reply(asked), "/why")
        call = await peer.wait_for_call("send_group_msg", lambda c: c.params.get("group_id") == group)
    assert f"消息 {asked}" in call.text
    assert "注意力" in call.text
    assert "score" not in call.text
    assert "medium" not in call.text


async def test_what_the_bot_sends_is_logged_and_nonebots_matcher_lines_are_not(model_bot: BotProcess) -> None:
    group = 775_101
    async with connected_peer(model_bot, self_id=SELF_ID) as peer:
        await peer.say_in_group(group, 42, ob.at(SELF_ID), " 在吗")
        call = await peer.wait_for_call("send_group_msg", lambda c: c.params.get("group_id") == group)
    (sent,) = await model_bot.await_log("sent", lambda r: str(group) in str(r.get("chat_id")))
    assert sent["level"] == "info"
    assert sent["text"] == call.text
    matcher_lines = [
        r
        for r in model_bot.records()
        if "running complete" in str(r.get("event")) or "will be handled by" in str(r.get("event"))
    ]
    assert matcher_lines == []


async def test_notices_ban_lift_poke_and_recall(model_bot: BotProcess) -> None:
    group = 776_001
    to_group = f"qq:{SELF_ID}:group:{group}"

    def in_group(call: object) -> bool:
        return getattr(call, "params", {}).get("group_id") == group

    async with connected_peer(model_bot, self_id=SELF_ID) as peer:
        await peer.post(ob.group_ban(self_id=SELF_ID, group_id=group, user_id=SELF_ID, duration=600))
        await model_bot.await_log(
            "notice", lambda r: r.get("kind") == "BotMuted" and r.get("chat_id") == to_group
        )
        await peer.say_in_group(group, ADMIN, "/status")
        await model_bot.await_log(
            "send_refused", lambda r: r.get("reason") == "muted" and r.get("chat_id") == to_group
        )
        assert [c for c in peer.sends() if in_group(c)] == [], "nothing goes to a group that banned the bot"

        await peer.post(ob.group_ban(self_id=SELF_ID, group_id=group, user_id=SELF_ID, duration=0, lift=True))
        await model_bot.await_log(
            "notice", lambda r: r.get("kind") == "BotUnmuted" and r.get("chat_id") == to_group
        )
        await peer.say_in_group(group, ADMIN, "/status")
        await peer.wait_for_call("send_group_msg", in_group)

        await peer.post(ob.poke(self_id=SELF_ID, user_id=42, target_id=SELF_ID, group_id=group))
        await model_bot.await_log(
            "addressed", lambda r: r.get("how") == "poke" and r.get("chat_id") == to_group
        )

        said = await peer.say_in_group(group, 42, "发错了")
        await peer.post(ob.group_recall(self_id=SELF_ID, group_id=group, user_id=42, message_id=said))
        await model_bot.await_log(
            "notice", lambda r: r.get("kind") == "Recalled" and r.get("chat_id") == to_group
        )


async def test_a_failed_send_is_retried_once_over_the_wire(model_bot: BotProcess) -> None:
    group = 777_001

    def in_group(call: object) -> bool:
        return getattr(call, "params", {}).get("group_id") == group

    async with connected_peer(model_bot, self_id=SELF_ID) as peer:
        peer.fail_next("send_group_msg")
        asked = await peer.say_in_group(group, ADMIN, "/status")
        first = await peer.wait_for_call("send_group_msg", in_group)
        second = await peer.wait_for_call("send_group_msg", in_group, after=peer.calls.index(first) + 1)
        assert first.answer["status"] == "failed"
        assert second.answer["status"] == "ok"
        assert first.segments[0] == {"type": "reply", "data": {"id": str(asked)}}
        # Both attempts failing is a logged result, not a crash: the next command is still answered.
        failures = len(model_bot.wait_for_log("send_failed", timeout=0, count=0))
        peer.fail_next("send_group_msg", times=2)
        await peer.say_in_group(group, ADMIN, "/status")
        await model_bot.await_log("send_failed", count=failures + 2)
        before = len(peer.calls)
        await peer.say_in_group(group, ADMIN, "/status")
        answered = await peer.wait_for_call("send_group_msg", in_group, after=before)
        assert answered.answer["status"] == "ok"
        assert model_bot.alive


# -- fresh processes ------------------------------------------------------------------------------


async def test_access_token_is_required_and_never_logged(tmp_path: Path) -> None:
    token = "peer-token-5d1e2b7a"
    with BotProcess(tmp_path, env={"ONEBOT_ACCESS_TOKEN": token}) as bot:
        with pytest.raises(InvalidStatus) as refused:
            async with OneBotPeer(bot.ws_url, self_id=SELF_ID, access_token="wrong-token"):
                pass
        assert refused.value.response.status_code == 403
        async with OneBotPeer(bot.ws_url, self_id=SELF_ID, access_token=token) as peer:
            await bot.await_log("bot_connected")
            assert peer.connected
    assert bot.returncode == 0
    assert token not in bot.output()


async def test_shadow_mode_from_config_holds_even_with_a_model(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    bot = start_bot(
        model=openai_server, config="[bot]\nshadow_mode = true\n", env={"SUPERUSERS": f'["{ADMIN}"]'}
    )
    assert bot.wait_for_log("edge_started")[0]["shadow_mode"] is True
    async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
        await bot.await_log("bot_connected")
        await peer.say_in_group(778_001, ADMIN, "/status")
        await bot.await_log("shadow_send")
        assert peer.sends() == []


async def test_a_bad_config_is_refused_naming_the_key(tmp_path: Path) -> None:
    bot = BotProcess(tmp_path, config="[outbound]\nmax_per_minut = 3\n")
    with pytest.raises(RuntimeError, match="exited with 2"):
        bot.start()
    assert "outbound.max_per_minut" in bot.output()


async def test_sigterm_with_a_peer_connected_exits_cleanly_after_every_message(tmp_path: Path) -> None:
    bot = BotProcess(tmp_path).start()
    async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
        await bot.await_log("bot_connected")
        for n in range(50):
            await peer.say_in_group(779_001 + n % 5, 42, ob.at(SELF_ID), f" m{n}")
        await bot.await_log("addressed", count=50)
        code = bot.stop(timeout=15)
        assert await peer.wait_closed(within=5) is not None
    assert code == 0
    (stopped,) = bot.wait_for_log("edge_stopped", timeout=0)
    assert stopped["messages"] == 50
    assert stopped["dropped_at_shutdown"] == 0
    assert bot.wait_for_log("stopped", timeout=0)[0]["signal"] == "SIGTERM"
