"""Message identity, end to end: the real ``bot.py`` over its WebSocket, the scripted model, SQLite.

OneBot implementations derive their int32 message ids from hashes or restart their counters, so ids
repeat inside a chat over a long history: a message with a known id but another sender or text is a
new message, kept beside the older one. Only an exact repeated delivery of one message is one
message, stored once and answered once, also when it comes again after a restart.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from runtime.store.sqlite.schema import DB_FILENAME
from tests.e2e.conftest import StartBot
from tests.e2e.live import TaggedModel, connected_peer, reply_text, steps, tag
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
CONFIG = """
[scheduling]
high_delay_ms = 200
medium_delay_ms = 300

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 200
"""


def stored_texts(data_dir: Path, chat_id: str) -> list[str]:
    db = sqlite3.connect(data_dir / DB_FILENAME)
    try:
        rows = db.execute(
            "SELECT text FROM messages WHERE chat_id = ? AND from_self = 0 ORDER BY seq", (chat_id,)
        ).fetchall()
    finally:
        db.close()
    return [text for (text,) in rows]


async def test_a_reused_message_id_keeps_both_messages_in_the_context_and_the_store(
    start_bot: StartBot,
    openai_server: ScriptedOpenAIServer,
) -> None:
    model = TaggedModel(openai_server)
    model.on("reuse", steps(reply_text(f"苹果{tag('reuse')}")))
    group = 850_001
    bot = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await peer.post(
            ob.group_message(
                self_id=SELF_ID,
                group_id=group,
                user_id=901,
                message_id=4242,
                message=[ob.text("阿青最喜欢苹果")],
            )
        )
        # The implementation's counter restarted: the same id, new words.
        await peer.post(
            ob.group_message(
                self_id=SELF_ID, group_id=group, user_id=901, message_id=4242, message=[ob.text("今天下雨了")]
            )
        )
        await peer.post(
            ob.group_message(
                self_id=SELF_ID,
                group_id=group,
                user_id=901,
                message=[ob.at(SELF_ID), ob.text(f" {tag('reuse')}我刚才说我最喜欢什么？")],
            )
        )
        await peer.wait_for_call("send_group_msg", lambda c: tag("reuse") in c.text, within=15)
    (request,) = model.requests_for("reuse")
    assert "阿青最喜欢苹果" in request.all_text
    assert "今天下雨了" in request.all_text
    assert bot.stop() == 0
    texts = stored_texts(bot.data_dir, f"qq:{SELF_ID}:group:{group}")
    assert texts[:2] == ["阿青最喜欢苹果", "今天下雨了"]


async def test_a_repeated_delivery_is_answered_once_also_after_a_restart(
    start_bot: StartBot,
    openai_server: ScriptedOpenAIServer,
) -> None:
    model = TaggedModel(openai_server)
    model.on("dup", steps(reply_text(f"收到一次{tag('dup')}")))
    group = 850_002
    frame = ob.group_message(
        self_id=SELF_ID,
        group_id=group,
        user_id=903,
        message=[ob.at(SELF_ID), ob.text(f" {tag('dup')}这条消息会来两遍")],
    )
    first = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(first, self_id=SELF_ID) as peer:
        await peer.post(frame)
        await peer.post(frame)  # the implementation sent the same event twice at once ...
        await peer.wait_for_call("send_group_msg", lambda c: tag("dup") in c.text, within=15)
        await peer.post(frame)  # ... and once more after the answer (a reconnect's resend)
        await asyncio.sleep(2.0)  # past the scheduling delays: a second answer would have come
        assert len([c for c in peer.sends() if tag("dup") in c.text]) == 1
    assert len(model.requests_for("dup")) == 1
    assert first.stop() == 0

    second = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(second, self_id=SELF_ID) as peer:
        await peer.post(frame)  # delivered again after the restart (a journal replaying it, say)
        await asyncio.sleep(3.0)
        assert [c for c in peer.sends() if tag("dup") in c.text] == []
    assert len(model.requests_for("dup")) == 1
    assert second.wait_for_log("duplicate_delivery", timeout=0)
    assert second.stop() == 0
    assert (
        len([t for t in stored_texts(second.data_dir, f"qq:{SELF_ID}:group:{group}") if tag("dup") in t]) == 1
    )
