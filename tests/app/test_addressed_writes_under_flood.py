"""An @'s own writes do not wait for the flood of messages the store writer is committing.

Real parts: the runtime with its SQLite store in ``tmp_path``, the scripted model over HTTP. The
flood: other groups' messages kept queued in the store writer, so that it commits full batches one
after another, each insert slowed inside SQLite (a trigger: a batch of 500 takes half a second, as
on a busy machine at 400 messages a second). Then an @ in each of a few quiet groups. Its context's rows (its
topic thread, its session, the user's turn) are written beside its model request, and its reply
waits for them; the writer's batch in the database when they come commits what it has and lets them
in. So each of those writes waits for a slice of rows (``APPLY_SLICE``), not for the rest of the
batch: the reply is not behind the flood. And every message is still stored once, in the order it
came, before and after a restart.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime.store.records import StoredMessage
from runtime.store.sqlite.store import APPLY_SLICE
from tests.app.conftest import Harness, make_config, running
from tests.app.context_writes import Write, until, wrap_context_writes
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

ASK = "灰风 帮我规划一下周末的露营路线"
CHATTER = "今天食堂的红烧肉又咸了，下午谁去打球"
ROW_SECONDS = 0.001  # each flood insert inside SQLite: a batch of 500 takes half a second
KEEP_QUEUED = 700  # the flood keeps the writer's queue at least this long (full batches of 500)
QUIET_GROUPS = ("group:501", "group:502", "group:503")


class Flood:
    """Other groups' messages, offered to the writer whenever its queue runs below KEEP_QUEUED."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.offered: list[str] = []
        self.stop = anyio.Event()

    async def run(self) -> None:
        writer = self.h.runtime.writer
        while not self.stop.is_set():
            while writer.statistics().queued < KEEP_QUEUED:
                n = len(self.offered) + 1
                message = StoredMessage(
                    f"group:{600 + n % 200}", f"f{n}", str(n % 50), "路人", self.h.clock(), f"{CHATTER} {n}"
                )
                assert writer.offer(message)
                self.offered.append(message.message_id)
            await anyio.sleep(0.01)


def stored_order(data_dir: Path) -> list[str]:
    """The flood's message ids on disk, in the order the store took them."""
    with sqlite3.connect(data_dir / "greywind.sqlite3") as db:
        sql = "SELECT message_id FROM messages WHERE message_id LIKE 'f%' ORDER BY seq"
        rows = db.execute(sql).fetchall()
    return [row[0] for row in rows]


async def test_an_ats_writes_and_its_reply_do_not_wait_for_the_batch_of_flood_in_the_database(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(*({"text": f"好呀，{n} 号先说说想去哪"} for n in range(len(QUIET_GROUPS))))
    config = make_config(openai_server, store={"flush_interval_ms": 200})
    slow = [True]
    inserted = [0]  # flood rows inserted so far (in the write connection's thread)

    def flood_row() -> None:
        inserted[0] += 1
        if slow[0]:
            time.sleep(ROW_SECONDS)

    waits: list[tuple[str, str, int]] = []  # (chat, part, flood rows inserted while the write waited)
    async with running(config, data_dir) as h:
        store = h.runtime.store
        await store._db.create_function("flood_row", 0, flood_row)
        await store._db.execute(
            "CREATE TEMP TRIGGER slow_flood AFTER INSERT ON messages WHEN NEW.message_id LIKE 'f%' "
            "BEGIN SELECT flood_row(); END"
        )
        asking: list[str] = []

        def noted(part: str, write: Write) -> Write:
            async def write_and_note(row: Any) -> None:
                before = inserted[0]
                try:
                    await write(row)
                finally:
                    chat = getattr(row, "chat_id", None) or row.chat_ids[0]
                    if chat in asking and not h.outbound.texts(chat):  # an @'s own, before its reply
                        waits.append((chat, part, inserted[0] - before))

            return write_and_note

        wrap_context_writes(store, noted)
        flood = Flood(h)
        async with anyio.create_task_group() as tg:
            tg.start_soon(flood.run)
            assert await until(lambda: inserted[0] > 600)  # a batch is through, the next one going in
            for chat in QUIET_GROUPS:
                assert h.runtime.writer.statistics().queued >= 500  # the flood is in the writer's queue
                asking.append(chat)
                await h.say(ASK, chat=chat, addressed=True)
                h.runtime.loop.run_due()
                assert await until(lambda chat=chat: bool(h.outbound.texts(chat)), within=20)
            flood.stop.set()
        slow[0] = False
        await h.runtime.writer.flush()
        order = stored_order(data_dir)
        dialogues = {
            chat: [s.recent_dialogue for s in await store.list_sessions(chat_id=chat)]
            for chat in QUIET_GROUPS
        }

    assert [part for chat, part, _ in waits if chat == QUIET_GROUPS[0]] == ["thread", "session", "session"]
    behind = {(chat, part): rows for chat, part, rows in waits if rows > 3 * APPLY_SLICE}
    assert not behind, f"the @'s writes waited for this many flood rows to go in: {behind} (all: {waits})"
    assert order == flood.offered  # every message once, in the order it came
    for n, chat in enumerate(QUIET_GROUPS):
        assert dialogues[chat] == [(f"阿明: {ASK}", f"灰风: 好呀，{n} 号先说说想去哪")]

    async with running(config, data_dir) as again:
        assert stored_order(data_dir) == flood.offered
        for n, chat in enumerate(QUIET_GROUPS):
            (session,) = await again.runtime.store.list_sessions(chat_id=chat)
            assert session.recent_dialogue == (f"阿明: {ASK}", f"灰风: 好呀，{n} 号先说说想去哪")
