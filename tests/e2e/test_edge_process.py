"""The real bot process with a OneBot peer on its reverse WebSocket: start-up, robustness, shutdown."""

from __future__ import annotations

from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from tests.e2e.bot_process import BotProcess
from tests.e2e.conftest import TEST_API_KEY, StartBot
from tests.e2e.onebot_peer import OneBotPeer
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
GROUP = 777_001
ADMIN = 4_242


def logged_message(message_id: int | str):  # type: ignore[no-untyped-def]
    return lambda record: record.get("message_id") == str(message_id)


def has_hint(record: dict[str, object]) -> bool:
    return "hint" in record


async def test_starts_without_a_model_says_what_to_set_and_sends_nothing(tmp_path: Path) -> None:
    bot = BotProcess(tmp_path).start()
    try:
        (hint,) = bot.wait_for_log("no_model", has_hint)
        assert "GREYWIND_LLM_BASE_URL" in hint["hint"]
        assert "GREYWIND_LLM_MODEL" in hint["hint"]
        assert "shadow mode" in hint["hint"]
        assert bot.wait_for_log("edge_started")[0]["shadow_mode"] is True

        async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
            await bot.await_log("bot_connected")
            mention = ob.group_message(
                self_id=SELF_ID, group_id=GROUP, user_id=42, message=[ob.at(SELF_ID), ob.text(" 在吗")]
            )
            private = ob.private_message(self_id=SELF_ID, user_id=42, message=[ob.text("你好")])
            await peer.post(mention)
            await peer.post(private)
            (seen_mention,) = await bot.await_log("addressed", logged_message(mention["message_id"]))
            (seen_private,) = await bot.await_log("addressed", logged_message(private["message_id"]))
            assert seen_mention["how"] == "mention"
            assert seen_mention["chat_id"] == f"group:{GROUP}"
            assert seen_private["how"] == "private"
            assert seen_private["chat_id"] == "private:42"
            assert peer.sends() == [], "shadow mode must not send"
        assert (tmp_path / "data").is_dir()
    finally:
        code = bot.stop()
    assert code == 0
    assert bot.wait_for_log("edge_stopped", timeout=0)
    assert bot.wait_for_log("stopped", timeout=0)[0]["signal"] == "SIGTERM"


async def test_reply_to_the_bot_is_resolved_through_get_msg(tmp_path: Path) -> None:
    with BotProcess(tmp_path) as bot:
        async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
            await bot.await_log("bot_connected")
            # A message the bot "sent" earlier, known to the peer's get_msg.
            peer.messages[555] = ob.get_msg_result(
                message_id=555, sender_id=SELF_ID, message=[ob.text("我是灰风")]
            )
            answer = ob.group_message(
                self_id=SELF_ID, group_id=GROUP, user_id=42, message=[ob.reply(555), ob.text("那你说说")]
            )
            await peer.post(answer)
            call = await peer.wait_for_call("get_msg")
            assert int(call.params["message_id"]) == 555
            (seen,) = await bot.await_log("addressed", logged_message(answer["message_id"]))
            assert seen["how"] == "reply"


async def test_malformed_events_unknown_segments_and_a_huge_message_break_nothing(tmp_path: Path) -> None:
    with BotProcess(tmp_path) as bot:
        async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
            await bot.await_log("bot_connected")
            await peer.post_raw("this is not json {")
            await peer.post_raw(b"\x00\xff binary garbage")
            await peer.post_raw("[1, 2, 3]")
            await peer.post({"post_type": "message"})  # no fields at all
            await peer.post(
                {"post_type": "notice", "notice_type": "group_ban", "self_id": SELF_ID, "time": 1}
            )
            await peer.post({"post_type": "message", "message_type": "group", "self_id": "not-a-number"})
            odd = ob.group_message(
                self_id=SELF_ID,
                group_id=GROUP,
                user_id=42,
                message=[
                    ob.at(SELF_ID),
                    ob.segment("hologram", shape="cube"),
                    ob.segment("at"),
                    ob.segment("text"),
                    ob.text("看这个"),
                ],
            )
            huge = ob.group_message(
                self_id=SELF_ID, group_id=GROUP, user_id=43, message=[ob.at(SELF_ID), ob.text("长" * 200_000)]
            )
            await peer.post(odd)
            await peer.post(huge)
            after = ob.private_message(self_id=SELF_ID, user_id=44, message=[ob.text("还在吗")])
            await peer.post(after)

            (seen_odd,) = await bot.await_log("addressed", logged_message(odd["message_id"]))
            await bot.await_log("message_truncated", logged_message(huge["message_id"]))
            (seen_huge,) = await bot.await_log("addressed", logged_message(huge["message_id"]))
            await bot.await_log("addressed", logged_message(after["message_id"]))
            assert seen_huge["chars"] < 5_000
            assert seen_odd["chars"] > 0
            assert peer.connected, f"the bot dropped the connection ({peer.close_code} {peer.close_reason})"
            assert bot.alive
            assert bot.wait_for_log("onebot_frame_not_json", timeout=0, count=2)
            assert bot.wait_for_log("onebot_segments_repaired", timeout=0)
    assert bot.returncode == 0


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


async def test_superuser_can_ask_for_status_in_private_even_in_shadow_mode(tmp_path: Path) -> None:
    with BotProcess(tmp_path, env={"SUPERUSERS": f'["{ADMIN}"]'}) as bot:
        async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
            await bot.await_log("bot_connected")
            await peer.say_in_private(ADMIN, "/status")
            call = await peer.wait_for_call("send_private_msg")
            assert call.params["user_id"] == ADMIN
            assert "影子模式" in call.text
            # The same command in a group stays unsent: shadow mode holds there.
            await peer.post(
                ob.group_message(self_id=SELF_ID, group_id=GROUP, user_id=ADMIN, message=[ob.text("/status")])
            )
            await bot.await_log("shadow_send")
            assert [c.action for c in peer.sends()] == ["send_private_msg"]


async def test_a_bad_config_is_refused_naming_the_key(tmp_path: Path) -> None:
    bot = BotProcess(tmp_path, config="[outbound]\nmax_per_minut = 3\n")
    with pytest.raises(RuntimeError, match="exited with 2"):
        bot.start()
    assert "outbound.max_per_minut" in bot.output()


async def test_sigterm_with_a_peer_connected_exits_cleanly_and_closes_the_connection(tmp_path: Path) -> None:
    bot = BotProcess(tmp_path).start()
    async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
        await bot.await_log("bot_connected")
        for n in range(50):
            await peer.post(
                ob.group_message(
                    self_id=SELF_ID,
                    group_id=GROUP + n % 5,
                    user_id=42,
                    message=[ob.at(SELF_ID), ob.text(f" m{n}")],
                )
            )
        await bot.await_log("addressed", count=50)
        code = bot.stop(timeout=15)
        assert await peer.wait_closed(within=5) is not None
    assert code == 0
    (stopped,) = bot.wait_for_log("edge_stopped", timeout=0)
    assert stopped["messages"] == 50
    assert stopped["dropped_at_shutdown"] == 0


async def test_with_a_model_configured_the_bot_speaks_and_keys_stay_out_of_the_logs(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    bot = start_bot(model=openai_server, env={"SUPERUSERS": f'["{ADMIN}"]'})
    assert bot.wait_for_log("edge_started")[0]["shadow_mode"] is False
    async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
        await bot.await_log("bot_connected")
        await peer.post(
            ob.group_message(self_id=SELF_ID, group_id=GROUP, user_id=ADMIN, message=[ob.text("/status")])
        )
        call = await peer.wait_for_call("send_group_msg")
        assert call.params["group_id"] == GROUP
        assert "正常发言" in call.text
    assert bot.stop() == 0
    assert TEST_API_KEY not in bot.output()


async def test_shadow_mode_from_config_holds_even_with_a_model(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    bot = start_bot(
        model=openai_server, config="[bot]\nshadow_mode = true\n", env={"SUPERUSERS": f'["{ADMIN}"]'}
    )
    assert bot.wait_for_log("edge_started")[0]["shadow_mode"] is True
    async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
        await bot.await_log("bot_connected")
        await peer.post(
            ob.group_message(self_id=SELF_ID, group_id=GROUP, user_id=ADMIN, message=[ob.text("/status")])
        )
        await bot.await_log("shadow_send")
        assert peer.sends() == []


async def test_notices_ban_lift_poke_and_recall(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    bot = start_bot(model=openai_server, env={"SUPERUSERS": f'["{ADMIN}"]'})
    async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
        await bot.await_log("bot_connected")
        await peer.post(ob.group_ban(self_id=SELF_ID, group_id=GROUP, user_id=SELF_ID, duration=600))
        await bot.await_log("notice", lambda r: r.get("kind") == "BotMuted")
        await peer.say_in_group(GROUP, ADMIN, "/status")
        await bot.await_log("send_refused", lambda r: r.get("reason") == "muted")
        assert peer.sends() == [], "nothing goes to a group that banned the bot"

        await peer.post(ob.group_ban(self_id=SELF_ID, group_id=GROUP, user_id=SELF_ID, duration=0, lift=True))
        await bot.await_log("notice", lambda r: r.get("kind") == "BotUnmuted")
        await peer.say_in_group(GROUP, ADMIN, "/status")
        call = await peer.wait_for_call("send_group_msg")
        assert call.params["group_id"] == GROUP

        await peer.post(ob.poke(self_id=SELF_ID, user_id=42, target_id=SELF_ID, group_id=GROUP))
        (poked,) = await bot.await_log("addressed", lambda r: r.get("how") == "poke")
        assert poked["chat_id"] == f"group:{GROUP}"

        said = await peer.say_in_group(GROUP, 42, "发错了")
        await peer.post(ob.group_recall(self_id=SELF_ID, group_id=GROUP, user_id=42, message_id=said))
        await bot.await_log("notice", lambda r: r.get("kind") == "Recalled")


async def test_a_failed_send_is_retried_once_over_the_wire(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    bot = start_bot(model=openai_server, env={"SUPERUSERS": f'["{ADMIN}"]'})
    async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
        await bot.await_log("bot_connected")
        peer.fail_next("send_group_msg")
        asked = await peer.say_in_group(GROUP, ADMIN, "/status")
        first = await peer.wait_for_call("send_group_msg")
        second = await peer.wait_for_call("send_group_msg", after=peer.calls.index(first) + 1)
        assert first.answer["status"] == "failed"
        assert second.answer["status"] == "ok"
        assert first.segments[0] == {"type": "reply", "data": {"id": str(asked)}}
        # Both attempts failing is a logged result, not a crash: the next command is still answered.
        peer.fail_next("send_group_msg", times=2)
        await peer.say_in_group(GROUP, ADMIN, "/status")
        await bot.await_log("send_failed", count=3)
        before = len(peer.calls)
        await peer.say_in_group(GROUP, ADMIN, "/status")
        answered = await peer.wait_for_call("send_group_msg", after=before)
        assert answered.answer["status"] == "ok"
        assert bot.alive
