"""The Runtime behind the real Edge: OneBot events in, commands and mute words through the edge."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.app.conftest import FakeBot, FakeClock, make_config
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

SELF = 10_000
GROUP = 555_001
ADMIN = 1
MEMBER = 42


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


@asynccontextmanager
async def edge_running(config: Any, data_dir: Path, clock: FakeClock) -> AsyncIterator[tuple[Any, FakeBot]]:
    from plugins.greywind.edge import Edge
    from runtime.app import build_runtime

    bot = FakeBot(clock=clock)
    edge = Edge(
        config,
        config_path=data_dir / "greywind.toml",
        data_dir=data_dir,
        superusers=[str(ADMIN)],
        env={},
        clock=clock,
        factory=build_runtime,
    )
    edge.bot_connected(str(SELF), bot)
    await edge.start()
    try:
        yield edge, bot
    finally:
        await edge.stop()


async def deliver(edge: Any, payload: dict[str, Any]) -> None:
    from tests.edge.helpers import as_adapter_delivers

    await edge.handle_message(await as_adapter_delivers(payload))
    await edge.dispatcher.wait_idle()
    runtime = edge.gateway
    runtime.loop.run_due()
    await runtime.loop.wait_idle()


def group(clock: FakeClock, user: int, *segments: dict[str, Any]) -> dict[str, Any]:
    return ob.group_message(
        self_id=SELF, group_id=GROUP, user_id=user, message=list(segments), when=int(clock())
    )


async def test_a_mute_word_opens_a_quiet_period_that_holds_even_for_mentions(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("我在")})
    clock = FakeClock()
    async with edge_running(make_config(openai_server), data_dir, clock) as (edge, bot):
        await deliver(edge, group(clock, MEMBER, ob.at(SELF), ob.text(" 闭嘴")))
        clock.advance(5)
        await deliver(edge, group(clock, MEMBER, ob.at(SELF), ob.text(" 在吗")))
        assert bot.calls == []
        assert openai_server.chat_requests == []  # nothing deliberated while it could not be said
        clock.advance(5)
        await deliver(edge, group(clock, ADMIN, ob.text("/unmute")))
        assert bot.texts() == [f"qq:{SELF}:group:{GROUP} 已解除安静。"]
        clock.advance(5)
        await deliver(edge, group(clock, MEMBER, ob.at(SELF), ob.text(" 现在呢")))
        assert bot.texts()[-1] == "我在"


async def test_why_and_status_answer_superusers(openai_server: ScriptedOpenAIServer, data_dir: Path) -> None:
    openai_server.load({"default": reply("在")})
    clock = FakeClock()
    async with edge_running(make_config(openai_server), data_dir, clock) as (edge, bot):
        await deliver(edge, group(clock, MEMBER, ob.at(SELF), ob.text(" 在吗")))
        clock.advance(5)
        await deliver(edge, group(clock, MEMBER, ob.text("今天好冷")))
        clock.advance(5)
        await deliver(edge, group(clock, ADMIN, ob.text("/why")))
        why = bot.texts()[-1]
        assert "今天好冷" not in why  # the command explains, it does not quote
        assert "low" in why
        assert "recorded" in why
        await deliver(edge, group(clock, ADMIN, ob.text("/status")))
        status = bot.texts()[-1]
        assert f"qq:{SELF}:group:{GROUP}" in status
        assert "今日 token" in status
