"""Continuity across a restart: SIGTERM, start again on the same data directory, carry on.

The first run hears a fact and is asked for a reminder (the model calls ``schedule_message``); it is
stopped before the reminder is due. The second run sends the reminder without being asked again, and
answers a question about the fact with the first run's dialogue in front of the model.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.e2e.conftest import StartBot
from tests.e2e.live import TaggedModel, connected_peer, own_errors, reply_text, steps, tag, tool_call
from tests.support import onebot_events as ob
from tests.support.openai_server import RecordedRequest, ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
GROUP = 800_201
FRIEND = 602
REMINDER_SECONDS = 5
CONFIG = """
[scheduling]
high_delay_ms = 200
medium_delay_ms = 300

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 200
"""


def reminder_handler(request: RecordedRequest, nth: int):  # type: ignore[no-untyped-def]
    if nth == 0:
        return tool_call(
            "schedule_message", delay_minutes=REMINDER_SECONDS / 60, text=f"该喝水了{tag('drink')}"
        )
    if nth == 1:
        return reply_text(f"好，{REMINDER_SECONDS} 秒后提醒你{tag('rem')}")
    return reply_text(f"该喝水啦{tag('drink')}")


# The same continuity on a PostgreSQL database (the DSN in the environment, the account leased).
ON_POSTGRES = '\n[store]\nbackend = "postgresql"\nlease_accounts = ["10000"]\n'


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_a_restart_keeps_the_conversation_and_sends_the_reminder_it_promised(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer, backend: str, request: pytest.FixtureRequest
) -> None:
    config, env = CONFIG, {}
    if backend == "postgresql":
        config, env = CONFIG + ON_POSTGRES, {"GREYWIND_PG_DSN": request.getfixturevalue("postgres_dsn")}
    model = TaggedModel(openai_server)
    model.on("r1", steps(reply_text(f"记住了，青色{tag('r1')}")))
    model.on("rem", reminder_handler)
    model.on("drink", steps(reply_text(f"该喝水啦{tag('drink')}")))

    first = start_bot(model=openai_server, config=config, env=env)
    assert first.wait_for_log("store.opened", timeout=30)[0].get("backend", "sqlite") == backend
    async with connected_peer(first, self_id=SELF_ID) as peer:
        await peer.post(
            ob.group_message(
                self_id=SELF_ID,
                group_id=GROUP,
                user_id=601,
                message=[ob.at(SELF_ID), ob.text(f" {tag('r1')}我叫阿青，我最喜欢的颜色是青色，记住哦")],
            )
        )
        await peer.wait_for_call("send_group_msg", lambda c: tag("r1") in c.text, within=15)
        await peer.post(
            ob.private_message(
                self_id=SELF_ID,
                user_id=FRIEND,
                message=[ob.text(f"{tag('rem')}{REMINDER_SECONDS}秒后提醒我喝水")],
            )
        )
        await peer.wait_for_call("send_private_msg", lambda c: tag("rem") in c.text, within=15)
        assert not [c for c in peer.sends() if "喝水" in c.text and tag("rem") not in c.text]
        offered = {tool["function"]["name"] for tool in model.requests_for("rem")[0].tools or []}
        assert "schedule_message" in offered
    assert first.stop() == 0

    second = start_bot(model=openai_server, config=config, env=env)
    async with connected_peer(second, self_id=SELF_ID) as peer:
        reminder = await peer.wait_for_call(
            "send_private_msg", lambda c: "喝水" in c.text, within=REMINDER_SECONDS + 15
        )
        assert reminder.params["user_id"] == FRIEND

        await peer.post(
            ob.group_message(
                self_id=SELF_ID,
                group_id=GROUP,
                user_id=601,
                message=[ob.at(SELF_ID), ob.text(f" {tag('r2')}我最喜欢什么颜色来着？")],
            )
        )
        await peer.wait_for_call("send_group_msg", lambda c: tag("r2") in c.text, within=15)
    (request,) = model.requests_for("r2")
    assert "青色" in request.all_text, "the second run's packet carries the first run's dialogue or handoff"
    assert second.stop() == 0
    assert own_errors(first) == own_errors(second) == []


async def test_a_reminder_due_while_the_bot_was_down_is_sent_once_the_account_reconnects(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer
) -> None:
    model = TaggedModel(openai_server)
    model.on(
        "soon",
        steps(
            tool_call("schedule_message", delay_minutes=2 / 60, text=f"该出门了{tag('soon')}"),
            reply_text(f"好，到点叫你{tag('soon')}"),
        ),
    )
    first = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(first, self_id=SELF_ID) as peer:
        asked = time.monotonic()
        await peer.say_in_private(FRIEND, f"{tag('soon')}两秒后提醒我出门")
        await peer.wait_for_call("send_private_msg", lambda c: "到点叫你" in c.text, within=15)
    assert first.stop() == 0
    # Down past the reminder's time; then the OneBot implementation takes a moment to dial back in.
    await asyncio.sleep(max(0.0, asked + 3.0 - time.monotonic()))
    second = start_bot(model=openai_server, config=CONFIG)
    await asyncio.sleep(2.0)
    async with connected_peer(second, self_id=SELF_ID) as peer:
        reminder = await peer.wait_for_call("send_private_msg", lambda c: "该出门了" in c.text, within=6)
        assert reminder.params["user_id"] == FRIEND
    assert second.stop() == 0
