"""A full disk in the running runtime: the message path and the reply never wait on storage."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from plugins.greywind.journal import InboundJournal, frame_key
from tests.app.conftest import make_config, running
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


async def test_a_full_disk_with_more_messages_than_the_queue_holds_still_answers_and_shows_in_status(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push({"text": "磁盘满了我也在"})
    config = make_config(openai_server, store={"queue_max": 20, "retry_backoff_ms": 50})
    async with running(config, data_dir) as h:
        store = h.runtime.store
        pages = (await store._one("PRAGMA page_count"))[0]
        # SQLite's own "database or disk is full", on the write connection: every commit fails.
        await store._db.execute(f"PRAGMA max_page_count = {pages}")
        started = time.monotonic()
        async with asyncio.timeout(10):  # (a waiting message path would wait until the disk is fixed)
            for n in range(60):  # three times what the writer's queue holds
                await h.say(f"闲聊 {n} " + "填满" * 200, chat="group:600", sender=str(100 + n % 5))
            ingest = time.monotonic() - started
            await h.say("灰风 你还在吗", addressed=True)
            await h.settle()
        answered = time.monotonic() - started
        assert h.bot.texts() == ["磁盘满了我也在"]
        for _ in range(200):  # the writer's first commits fail meanwhile
            if h.runtime.writer.statistics().failing_since is not None:
                break
            await asyncio.sleep(0.01)
        stats = h.runtime.writer.statistics()
        assert stats.dropped >= 30
        assert stats.failing_since is not None
        status = await h.runtime.control.status(None)
        assert "写入失败中" in status
        assert "disk is full" in status
        assert f"丢弃 {stats.dropped} 条" in status
        await store._db.execute("PRAGMA max_page_count = 1073741823")
    assert ingest < 2.0
    assert answered < 5.0


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
