"""A flood faster than the store: every message the bot takes is stored, none dropped.

Real parts: the runtime with its SQLite store in ``tmp_path``, the scripted model over HTTP. The
store writer's queue holds a few writes and commits a few at a time; hundreds of messages come one
after another, with no pause for the writer to run between them. The message path waits for room in
the writer's queue (the store is healthy, only slower than the messages), so every message is
stored, in the order it came; and the room it leaves keeps the bot's own replies, whose writes
cannot wait.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.app.runtime import SELF_SENDER
from tests.app.conftest import make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

MESSAGES = 300


async def test_a_flood_faster_than_the_store_loses_no_message_write(data_dir: Path) -> None:
    config = make_config(None, store={"queue_max": 8, "flush_max_items": 4, "flush_interval_ms": 50})
    async with running(config, data_dir) as h:
        said = [await h.say(f"第{n}条：今天食堂的红烧肉又咸了", sender=str(n % 7)) for n in range(MESSAGES)]
        await h.runtime.writer.flush()
        writer = h.runtime.writer.statistics()
        stored = await h.runtime.store.list_messages("group:500", limit=1_000)
    assert writer.dropped == 0
    assert [m.message_id for m in stored] == [m.message_id for m in said]


async def test_the_bots_own_replies_in_a_flood_are_stored(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": {"tool_calls": [{"name": "reply", "arguments": {"text": "在的"}}]}})
    config = make_config(
        openai_server, store={"queue_max": 20, "flush_max_items": 10, "flush_interval_ms": 50}
    )
    chats = [f"group:{600 + n}" for n in range(10)]
    async with running(config, data_dir) as h:
        for n in range(MESSAGES):
            if n % 30 == 0:  # an @ in each chat in turn, amid the flood
                await h.say("灰风 在吗", chat=chats[n // 30], addressed=True)
            await h.say(f"第{n}条：今天好热", chat=chats[n % 10])
        await h.settle()
        await h.runtime.writer.flush()
        writer = h.runtime.writer.statistics()
        replies = len(h.outbound.texts())
        stored = [m for chat in chats for m in await h.runtime.store.list_messages(chat, limit=1_000)]
    assert replies == len(chats)
    assert writer.dropped == 0
    assert sum(m.sender_id == SELF_SENDER for m in stored) == replies
    assert len(stored) == MESSAGES + 2 * replies
