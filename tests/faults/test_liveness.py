"""An @ in a quiet group is answered promptly whatever the other groups do: the real bot, its real
WebSocket, the scripted model.

Each scenario starts its own ``bot.py`` (a flood leaves a backlog behind it) and measures from the
moment the peer posts the @ to the moment the model server receives the episode's request for it.
The bounds are generous (a loaded 2-core machine); ``bench/fairness.py`` measures the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.conftest import StartBot
from tests.e2e.live import TaggedModel, reply_text, tag
from tests.e2e.onebot_peer import OneBotPeer
from tests.support import onebot_events as ob
from tests.support.openai_server import RecordedRequest, ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
PROMPT = 5.0  # seconds from posting an @ to the model's request for it
# Forced replies unbudgeted, sends as fast as the config allows: only the pipeline stands between an @
# and the model.
CONFIG = """
[budget.forced]
min_interval_ms = 0
max_per_window = 100000
window_ms = 600000

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 100
"""


def chatter_frames(count: int, groups: int, first_group: int) -> list[str]:
    return [
        json.dumps(
            ob.group_message(
                self_id=SELF_ID,
                group_id=first_group + n % groups,
                user_id=50_000 + n % 997,
                message=[ob.text(f"今天吃什么呀 第{n}条")],
            ),
            ensure_ascii=False,
        )
        for n in range(count)
    ]


def at_frame(group: int, text: str, user: int = 42) -> str:
    return json.dumps(
        ob.group_message(
            self_id=SELF_ID, group_id=group, user_id=user, message=[ob.at(SELF_ID), ob.text(text)]
        ),
        ensure_ascii=False,
    )


async def reached(model: TaggedModel, name: str, count: int, *, within: float) -> list[RecordedRequest]:
    """The model's first ``count`` requests for ``name``'s tag, waiting up to ``within`` seconds."""
    deadline = time.monotonic() + within
    found = model.requests_for(name)
    while len(found) < count and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        found = model.requests_for(name)
    assert len(found) >= count, (
        f"the model got {len(found)} of {count} requests for {tag(name)} within {within}s"
    )
    return found[:count]


async def first_request(model: TaggedModel, name: str, *, within: float) -> RecordedRequest:
    return (await reached(model, name, 1, within=within))[0]


@contextlib.asynccontextmanager
async def flooding_peer(bot: BotProcess) -> AsyncIterator[OneBotPeer]:
    """A connected peer; on exit it hangs up without waiting for the bot to work off its backlog."""
    async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
        await bot.await_log("bot_connected", within=10)
        yield peer


async def post_at(peer: OneBotPeer, group: int, name: str) -> float:
    """Post an @ carrying ``name``'s tag; when it was posted (wall clock, as the server records)."""
    frame = at_frame(group, f" 在吗{tag(name)}")
    posted = time.time()
    await peer.post_raw(frame)
    return posted


async def test_an_at_in_a_quiet_group_reaches_the_model_promptly_after_a_20000_message_burst(
    start_bot: StartBot,
    openai_server: ScriptedOpenAIServer,
) -> None:
    model = TaggedModel(openai_server)
    bot = start_bot(model=openai_server, config=CONFIG)
    await bot.await_log("edge_started", within=20)
    async with flooding_peer(bot) as peer:
        for frame in chatter_frames(20_000, 200, 600_000):
            await peer.post_raw(frame)
        posted = await post_at(peer, 699_999, "quiet")
        request = await first_request(model, "quiet", within=PROMPT * 3)
        assert request.at - posted < PROMPT, (
            f"the @ reached the model {request.at - posted:.1f}s after it was posted"
        )
        assert peer.connected


async def test_at_spam_in_six_groups_does_not_delay_an_at_in_a_seventh(
    start_bot: StartBot,
    openai_server: ScriptedOpenAIServer,
) -> None:
    model = TaggedModel(openai_server)
    # Every spam answer takes a while, so the spamming chats always have episodes waiting.
    model.on("spam", lambda _request, _nth: {**reply_text("嗯"), "delay": 0.3})
    bot = start_bot(model=openai_server, config=CONFIG)
    await bot.await_log("edge_started", within=20)
    async with flooding_peer(bot) as peer:
        for n in range(80):
            for group in range(610_001, 610_007):
                await peer.post_raw(at_frame(group, f" 第{n}遍{tag('spam')}", user=42 + n))
        await first_request(model, "spam", within=PROMPT * 2)
        await asyncio.sleep(1.0)  # the spam's episodes are queued and running
        posted = await post_at(peer, 610_007, "seventh")
        request = await first_request(model, "seventh", within=PROMPT * 3)
        assert request.at - posted < PROMPT, (
            f"the @ reached the model {request.at - posted:.1f}s after it was posted"
        )


async def test_a_model_hanging_for_eight_chats_does_not_hold_back_a_ninth(
    start_bot: StartBot,
    openai_server: ScriptedOpenAIServer,
) -> None:
    model = TaggedModel(openai_server)
    model.on("hang", lambda _request, _nth: {**reply_text("……"), "delay": 60})
    bot = start_bot(model=openai_server, config=CONFIG)
    await bot.await_log("edge_started", within=20)
    async with flooding_peer(bot) as peer:
        for group in range(620_001, 620_009):
            await post_at(peer, group, "hang")
        await reached(model, "hang", 8, within=PROMPT * 2)
        posted = await post_at(peer, 620_009, "ninth")
        request = await first_request(model, "ninth", within=PROMPT * 3)
        assert request.at - posted < PROMPT, (
            f"the @ reached the model {request.at - posted:.1f}s after it was posted"
        )
        await peer.wait_for_call("send_group_msg", lambda call: tag("ninth") in call.text, within=PROMPT * 2)


async def test_an_overflowing_backlog_drops_chatter_not_ats_and_says_so_in_a_few_lines(
    start_bot: StartBot,
    openai_server: ScriptedOpenAIServer,
) -> None:
    model = TaggedModel(openai_server)
    # A backlog of 1 MB and few handlers: a burst of 12,000 messages overflows it several times over.
    config = CONFIG + "\n[bot]\nmax_events_in_flight = 4\nevent_backlog_mb = 1\n"
    bot = start_bot(model=openai_server, config=config)
    await bot.await_log("edge_started", within=20)
    frames = chatter_frames(12_000, 50, 630_000)
    ats = {f"drop{n}": 631_000 + n for n in range(10)}
    for n, (name, group) in enumerate(ats.items()):
        frames.insert(1_000 + n * 1_100, at_frame(group, f" 在吗{tag(name)}"))
    async with flooding_peer(bot) as peer:
        for frame in frames:
            await peer.post_raw(frame)
        for name in ats:
            await first_request(model, name, within=PROMPT * 3)
        assert peer.connected
    # The last summary is written when the backlog has drained; while an @ is being prepared chatter
    # drains at 100 frames/s, so on a busy machine that can take a while.
    deadline = time.monotonic() + 90
    while True:
        lines = [r for r in bot.records() if r.get("event") == "onebot_backlog_full"]
        if sum(int(r["dropped"]) for r in lines) > 1_000 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert sum(int(r["dropped"]) for r in lines) > 1_000, f"the burst overflowed the backlog: {lines}"
    assert len(lines) <= 5, f"{len(lines)} log lines for the drops: one summary per interval is enough"
