"""A full disk in the running runtime: the message path and the reply never wait on storage."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.app.conftest import make_config, running
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
        assert h.outbound.texts() == ["磁盘满了我也在"]
        for _ in range(200):  # the writer's first commits fail meanwhile
            if h.runtime.writer.statistics().failing_since is not None:
                break
            await asyncio.sleep(0.01)
        stats = h.runtime.writer.statistics()
        # All but what the queue holds and the failing batch the writer took from it (20 each).
        assert stats.dropped >= 60 - 2 * 20
        assert stats.failing_since is not None
        status = await h.runtime.control.status(None)
        assert "写入失败中" in status
        assert "disk is full" in status
        assert f"丢弃 {stats.dropped} 条" in status
        await store._db.execute("PRAGMA max_page_count = 1073741823")
    assert ingest < 2.0
    assert answered < 5.0
