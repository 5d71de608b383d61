"""Who may speak for the bot: only an authenticated OneBot connection, and each chat through its own account.

Against the real ``bot.py`` over its real WebSocket:

* the adapter's HTTP POST event routes are not served, so a forged POST can neither run a superuser's
  command nor plant an account that breaks the real one's later connection;
* off loopback the bot refuses to start without ``ONEBOT_ACCESS_TOKEN``;
* a second connection claiming a connected account is refused, and the first keeps working;
* with two accounts connected, every reply (and a reminder after a restart) goes through the account
  that owns the chat, and waits for that account instead of borrowing the other.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import InvalidStatus

from tests.e2e.bot_process import ROOT, BotProcess
from tests.e2e.conftest import StartBot
from tests.e2e.live import TaggedModel, connected_peer, own_errors, reply_text, steps, tag, tool_call
from tests.e2e.onebot_peer import OneBotPeer
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
OTHER_ID = 10_001
ADMIN = 4_242
TOKEN = "peer-token-9c41e07b"
HTTP_EVENT_PATHS = ("/onebot/v11/http", "/onebot/v11/http/", "/onebot/v11/")


async def _forge(bot: BotProcess, event: dict[str, object], *, self_id: int) -> list[int]:
    """POST ``event`` to every HTTP event route the adapter knows, unauthenticated; the status codes."""
    body = json.dumps(event, ensure_ascii=False)
    headers = {"X-Self-ID": str(self_id), "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bot.port}", timeout=5) as client:
        return [
            (await client.post(path, content=body, headers=headers)).status_code for path in HTTP_EVENT_PATHS
        ]


async def test_a_forged_http_event_runs_no_command_and_reaches_no_chat(start_bot: StartBot) -> None:
    bot = start_bot(env={"SUPERUSERS": f'["{ADMIN}"]', "ONEBOT_ACCESS_TOKEN": TOKEN})
    async with OneBotPeer(bot.ws_url, self_id=SELF_ID, access_token=TOKEN) as peer:
        await bot.await_log("bot_connected")
        forged = ob.private_message(self_id=SELF_ID, user_id=ADMIN, message=[ob.text("/mute g5151")])
        statuses = await _forge(bot, forged, self_id=SELF_ID)
        assert all(status >= 400 for status in statuses), statuses
        await asyncio.sleep(1.0)
        assert peer.sends() == [], "the forged command was answered"
        assert not [r for r in bot.records() if r.get("event") in ("command", "quiet_started")]

        # The real superuser, over the authenticated connection, finds group 5151 still open.
        await peer.say_in_private(ADMIN, "/status g5151")
        answer = await peer.wait_for_call("send_private_msg")
        assert "group:5151" in answer.text
        assert "不发言" not in answer.text
    assert bot.stop() == 0
    assert own_errors(bot) == []


async def test_a_forged_http_event_for_a_new_account_does_not_lock_the_real_one_out(
    start_bot: StartBot,
) -> None:
    bot = start_bot(env={"SUPERUSERS": f'["{ADMIN}"]', "ONEBOT_ACCESS_TOKEN": TOKEN})
    forged = ob.private_message(self_id=OTHER_ID, user_id=777, message=[ob.text("hello")])
    statuses = await _forge(bot, forged, self_id=OTHER_ID)
    assert all(status >= 400 for status in statuses), statuses
    # The real account dials in afterwards: it is accepted and its sends work.
    async with OneBotPeer(bot.ws_url, self_id=OTHER_ID, access_token=TOKEN) as peer:
        await bot.await_log("bot_connected")
        assert peer.connected
        for _ in range(2):
            assert "group:5151" in await _admin(peer, "/status g5151")
        assert [r for r in bot.records() if r.get("event") == "send_failed"] == []
    assert bot.stop() == 0


async def test_a_second_connection_claiming_a_connected_account_is_refused(start_bot: StartBot) -> None:
    bot = start_bot(env={"SUPERUSERS": f'["{ADMIN}"]', "ONEBOT_ACCESS_TOKEN": TOKEN})
    async with OneBotPeer(bot.ws_url, self_id=SELF_ID, access_token=TOKEN) as first:
        await bot.await_log("bot_connected")
        for token in ("wrong-token", TOKEN[:-1], TOKEN + "x", "", TOKEN):
            assert await _refused(bot, token) in (403, 1008), token
        assert first.connected
        await first.say_in_private(ADMIN, "/status")
        answer = await first.wait_for_call("send_private_msg")
        assert answer.answer["status"] == "ok"
    assert bot.stop() == 0
    assert TOKEN not in bot.output()


async def _refused(bot: BotProcess, token: str) -> int | None:
    """How a connection as the already-connected account ends: the HTTP status or the close code."""
    try:
        async with OneBotPeer(bot.ws_url, self_id=SELF_ID, access_token=token) as second:
            return await second.wait_closed(within=5)
    except InvalidStatus as refused:
        return refused.response.status_code


def _run_bot(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    process = BotProcess(tmp_path, env=env)
    return subprocess.run(
        [sys.executable, str(ROOT / "bot.py")],
        cwd=tmp_path,
        env=process.environment(),
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::"])
async def test_off_loopback_without_an_access_token_the_bot_refuses_to_start(
    tmp_path: Path, host: str
) -> None:
    done = _run_bot(tmp_path, {"HOST": host})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "ONEBOT_ACCESS_TOKEN" in done.stderr


async def test_off_loopback_with_an_access_token_the_bot_serves_it(tmp_path: Path) -> None:
    with BotProcess(tmp_path, env={"HOST": "0.0.0.0", "ONEBOT_ACCESS_TOKEN": TOKEN}) as bot:
        async with OneBotPeer(bot.ws_url, self_id=SELF_ID, access_token=TOKEN) as peer:
            await bot.await_log("bot_connected")
            assert peer.connected
    assert bot.returncode == 0


# -- two accounts: each chat through the account that owns it -------------------------------------

ROUTING_CONFIG = """
[scheduling]
high_delay_ms = 200
medium_delay_ms = 300

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 200
"""
GROUP_A = 800_501
GROUP_B = 800_502
REMINDER_SECONDS = 4


def _addressed(peer: OneBotPeer, group: int, text: str) -> dict[str, object]:
    return ob.group_message(
        self_id=peer.self_id, group_id=group, user_id=601, message=[ob.at(peer.self_id), ob.text(f" {text}")]
    )


async def test_each_chat_is_answered_through_its_own_account_even_after_a_restart(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    model = TaggedModel(openai_server)
    model.on(
        "rem",
        steps(
            tool_call(
                "schedule_message", delay_minutes=REMINDER_SECONDS / 60, text=f"该喝水了{tag('drink')}"
            ),
            reply_text(f"好，到点提醒{tag('rem')}"),
        ),
    )
    first = start_bot(model=openai_server, config=ROUTING_CONFIG)
    async with (
        connected_peer(first, self_id=SELF_ID) as a,
        connected_peer(first, self_id=OTHER_ID) as b,
    ):
        await a.post(_addressed(a, GROUP_A, f"{tag('ra')}你好"))
        await b.post(_addressed(b, GROUP_B, f"{tag('rb')}你好"))
        await a.wait_for_call("send_group_msg", lambda c: tag("ra") in c.text, within=15)
        await b.wait_for_call("send_group_msg", lambda c: tag("rb") in c.text, within=15)
        await b.post(_addressed(b, GROUP_B, f"{tag('rem')}{REMINDER_SECONDS}秒后提醒我喝水"))
        await b.wait_for_call("send_group_msg", lambda c: tag("rem") in c.text, within=15)
        assert {c.params["group_id"] for c in a.sends()} == {GROUP_A}
        assert {c.params["group_id"] for c in b.sends()} == {GROUP_B}
    assert first.stop() == 0

    # After the restart only the other account is back: the reminder waits for its own account.
    second = start_bot(model=openai_server, config=ROUTING_CONFIG)
    async with connected_peer(second, self_id=SELF_ID) as a:
        await asyncio.sleep(REMINDER_SECONDS + 3)
        assert [c for c in a.sends() if "喝水" in c.text] == []
        async with connected_peer(second, self_id=OTHER_ID) as b:
            reminder = await b.wait_for_call("send_group_msg", lambda c: "喝水" in c.text, within=15)
            assert reminder.params["group_id"] == GROUP_B
        assert a.sends() == []
    assert second.stop() == 0
    assert own_errors(first) == own_errors(second) == []


# -- quiet periods: who may lift which ------------------------------------------------------------

QUIET_GROUP = 800_601
ASKED_GROUP = 800_602
MEMBER = 603
PHRASE = "灰风说话"  # the shipped bot.unmute_phrase


async def _admin(peer: OneBotPeer, command: str) -> str:
    before = len(peer.calls)
    await peer.say_in_private(ADMIN, command)
    return (await peer.wait_for_call("send_private_msg", after=before, within=10)).text


async def _answered(peer: OneBotPeer, group: int, name: str, *, within: float) -> bool:
    await peer.post(_addressed(peer, group, f"{tag(name)}在吗"))
    try:
        await peer.wait_for_call("send_group_msg", lambda c: tag(name) in c.text, within=within)
    except TimeoutError:
        return False
    return True


async def test_a_member_lifts_a_quiet_period_members_asked_for_but_not_a_superusers_mute(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    TaggedModel(openai_server)  # answers every tagged message with its tag
    env = {"SUPERUSERS": f'["{ADMIN}"]'}
    first = start_bot(model=openai_server, config=ROUTING_CONFIG, env=env)
    async with connected_peer(first, self_id=SELF_ID) as peer:
        # Asked for by a member: the phrase lifts it.
        await peer.post(_addressed(peer, ASKED_GROUP, "闭嘴"))
        await first.await_log(
            "quiet_started", lambda r: r.get("chat_id") == f"qq:{SELF_ID}:group:{ASKED_GROUP}"
        )
        await peer.say_in_group(ASKED_GROUP, MEMBER, PHRASE)
        assert await _answered(peer, ASKED_GROUP, "asked", within=10)

        # Imposed by a superuser: the phrase does not.
        assert "/unmute" in await _admin(peer, f"/mute g{QUIET_GROUP}")
        await peer.say_in_group(QUIET_GROUP, MEMBER, PHRASE)
        assert not await _answered(peer, QUIET_GROUP, "q1", within=3)
        assert "quiet（管理员）" in await _admin(peer, f"/status g{QUIET_GROUP}")
    assert first.stop() == 0

    second = start_bot(model=openai_server, config=ROUTING_CONFIG, env=env)
    async with connected_peer(second, self_id=SELF_ID) as peer:
        await peer.say_in_group(QUIET_GROUP, MEMBER, PHRASE)
        assert not await _answered(peer, QUIET_GROUP, "q2", within=3)
        assert "quiet（管理员）" in await _admin(peer, f"/status g{QUIET_GROUP}")
        assert "已解除安静" in await _admin(peer, f"/unmute g{QUIET_GROUP}")
        assert await _answered(peer, QUIET_GROUP, "q3", within=10)
    assert second.stop() == 0
    assert own_errors(first) == own_errors(second) == []
