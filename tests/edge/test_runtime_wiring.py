"""The Runtime behind the real Edge: OneBot events in, commands and mute words through the edge, and
the inbound journal kept by what the runtime has committed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from plugins.greywind.journal import InboundJournal, frame_key
from tests.app.conftest import FakeClock, make_config, running
from tests.edge.helpers import FakeBot
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

SELF = 10_000
GROUP = 555_001
ADMIN = 1
MEMBER = 42


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


@asynccontextmanager
async def edge_running(config: Any, data_dir: Path, clock: FakeClock) -> AsyncIterator[tuple[Any, FakeBot]]:
    from plugins.greywind.edge import Edge
    from runtime.app import build_runtime

    bot = FakeBot(clock)
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
        assert "→ 低" in why  # the decision and action are said in Chinese
        assert "仅记录" in why
        await deliver(edge, group(clock, ADMIN, ob.text("/status")))
        status = bot.texts()[-1]
        assert f"qq:{SELF}:group:{GROUP}" in status
        assert "今日 token" in status


async def test_messages_the_writer_dropped_stay_in_the_inbound_journal_for_the_next_start(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    """The journal retires a segment only once what its frames became is committed; a write dropped on
    a full queue never will be, so the journal keeps it (and everything after it) for the replay."""
    config = make_config(openai_server, store={"queue_max": 5, "retry_backoff_ms": 50})
    async with running(config, data_dir) as h:
        journal = InboundJournal(data_dir / "journal", progress=h.runtime.store_progress)
        list(journal.open())
        store = h.runtime.store
        pages = (await store._one("PRAGMA page_count"))[0]
        await store._db.execute(f"PRAGMA max_page_count = {pages}")
        for n in range(20):  # four times what the writer's queue holds, each journaled, then handled
            frame = ob.group_message(
                self_id=1, group_id=600, user_id=7, message_id=n, message=[ob.text("填满" * 300)]
            )
            journal.append(frame, json.dumps(frame, ensure_ascii=False))
            await h.say("填满" * 300, chat="group:600", sender="7", message_id=str(n))
            journal.settle(frame_key(frame))
        assert h.runtime.writer.statistics().dropped > 0
        await store._db.execute("PRAGMA max_page_count = 1073741823")
        await h.runtime.writer.flush()  # storage is back: what was queued commits
        journal.retire()
        kept = [entry.frame["message_id"] for entry in InboundJournal(data_dir / "journal").open()]
        journal.close()
    assert kept == list(range(20))
