"""Storage faults, end to end: the real ``bot.py`` over its WebSocket, the scripted model, a real SQLite file.

The fault is another connection holding the database's write lock (``BEGIN IMMEDIATE`` from this
test process, on the bot's own file): every commit of the bot fails for as long as it is held, the
writer's queue (kept small here) overflows, and the bot must go on answering, show the failure in
``/status``, and stop on SIGTERM within its grace with a line saying how many writes were lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.store.sqlite.schema import DB_FILENAME
from tests.e2e.bot_process import BotProcess
from tests.e2e.conftest import StartBot
from tests.e2e.live import TaggedModel, connected_peer, reply_text, steps, tag, tool_call
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
ADMIN = 42
QUEUE_MAX = 40
CONFIG = f"""
[scheduling]
high_delay_ms = 200
medium_delay_ms = 300

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 200

[store]
queue_max = {QUEUE_MAX}
flush_max_items = 20
retry_backoff_max_ms = 500
"""
ENV = {"SUPERUSERS": f'["{ADMIN}"]'}


class LockHolder:
    """Holds the database's write lock from another connection until released."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._release = threading.Event()
        self._held = threading.Event()
        self._thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        db = sqlite3.connect(self._path, isolation_level=None, timeout=10)
        try:
            db.execute("BEGIN IMMEDIATE")
            self._held.set()
            self._release.wait(120)
            db.execute("ROLLBACK")
        finally:
            db.close()

    def __enter__(self) -> LockHolder:
        self._thread.start()
        assert self._held.wait(10), "could not take the database's write lock"
        return self

    def release(self) -> None:
        self._release.set()
        self._thread.join(10)

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def locked(bot: BotProcess) -> Iterator[LockHolder]:
    with LockHolder(bot.data_dir / DB_FILENAME) as holder:
        yield holder


async def chatter(peer, groups: range, per_group: int) -> None:  # type: ignore[no-untyped-def]
    for n in range(per_group):
        for group in groups:
            await peer.post(
                ob.group_message(
                    self_id=SELF_ID, group_id=group, user_id=500 + n % 7, message=[ob.text(f"闲聊 {n}")]
                )
            )


def said_in(group: int):  # type: ignore[no-untyped-def]
    return lambda call: call.params.get("group_id") == group


async def test_a_locked_database_holds_no_reply_and_status_shows_the_failing_writer(
    start_bot: StartBot,
    openai_server: ScriptedOpenAIServer,
) -> None:
    model = TaggedModel(openai_server)
    model.on("warm", steps(reply_text(f"在呢{tag('warm')}")))
    model.on("held", steps(reply_text(f"照样回你{tag('held')}")))
    model.on("after", steps(reply_text(f"又好了{tag('after')}")))
    bot = start_bot(model=openai_server, config=CONFIG, env=ENV)
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await peer.say_in_group(810_001, 601, ob.at(SELF_ID), f" {tag('warm')}在吗")
        await peer.wait_for_call("send_group_msg", lambda c: tag("warm") in c.text, within=15)

        with locked(bot) as holder:
            # Three times what the writer's queue holds, spread over chats, none of it addressed.
            await chatter(peer, range(820_001, 820_006), per_group=QUEUE_MAX * 3 // 5)
            await asyncio.sleep(2.0)  # the chatter is in, the writer's queue overflowing
            asked = time.monotonic()
            await peer.say_in_group(810_002, 602, ob.at(SELF_ID), f" {tag('held')}数据库锁着你还在吗")
            await peer.wait_for_call("send_group_msg", lambda c: tag("held") in c.text, within=8)
            answered = time.monotonic() - asked
            before_status = len(peer.calls)
            await peer.say_in_private(ADMIN, "/status")
            status = await peer.wait_for_call(
                "send_private_msg", lambda c: "存储" in c.text, within=5, after=before_status
            )
            assert "写入失败中" in status.text, status.text
            # The reply is sent in pieces of about bot.split_at characters: the reason may be in the next.
            reason = await peer.wait_for_call(
                "send_private_msg", lambda c: "locked" in c.text, within=5, after=before_status
            )
            assert "database is locked" in reason.text or "locked by another connection" in reason.text
            dropped = await bot.await_log("store.writes_dropped", within=5)
            assert dropped[0]["dropped"] >= 1
            assert dropped[0]["dropped_total"] >= 1
            holder.release()
            await bot.await_log("store.write_recovered", within=10)

        # An @ while the lock was held took no longer than a reply usually takes (plus the
        # writes' bounded wait), not as long as the lock was held.
        assert answered < 5.0, f"the @ was answered {answered:.1f}s after it was sent"
        await peer.say_in_group(810_003, 603, ob.at(SELF_ID), f" {tag('after')}现在呢")
        await peer.wait_for_call("send_group_msg", lambda c: tag("after") in c.text, within=15)
    assert bot.stop() == 0


async def test_sigterm_while_the_database_stays_locked_stops_on_time_and_counts_the_lost_writes(
    start_bot: StartBot,
    openai_server: ScriptedOpenAIServer,
) -> None:
    TaggedModel(openai_server)
    bot = start_bot(model=openai_server, config=CONFIG, env=ENV)
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        with locked(bot):
            await chatter(peer, range(830_001, 830_004), per_group=QUEUE_MAX // 2)
            await asyncio.sleep(2.0)
            stopping = time.monotonic()
            code = await asyncio.to_thread(bot.stop, 20.0)
            took = time.monotonic() - stopping
    assert code == 0
    assert took < 15.0, f"stopping took {took:.1f}s"
    (lost,) = bot.wait_for_log("store.writes_lost", timeout=0)
    assert lost["lost"] > 0
    assert "locked" in lost["reason"]


# -- odd text ---------------------------------------------------------------------------------------

LONE_SURROGATE = "\ud83d"  # half of a surrogate pair: valid JSON ("\\ud83d"), not encodable UTF-8


async def post_escaped(peer, event: dict[str, object]) -> None:  # type: ignore[no-untyped-def]
    """Post with JSON escapes, the way an implementation passes a lone surrogate through."""
    await peer.post_raw(json.dumps(event, ensure_ascii=True))


async def test_lone_surrogates_and_a_huge_nickname_lose_no_message(
    start_bot: StartBot,
    openai_server: ScriptedOpenAIServer,
) -> None:
    model = TaggedModel(openai_server)
    bot = start_bot(model=openai_server, config=CONFIG, env=ENV)
    huge = "长" * 100_000
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        await post_escaped(
            peer,
            ob.group_message(
                self_id=SELF_ID,
                group_id=840_001,
                user_id=701,
                message=[ob.at(SELF_ID), ob.text(f" {tag('sur1')}半个表情{LONE_SURROGATE}在这")],
            ),
        )
        await peer.wait_for_call("send_group_msg", lambda c: tag("sur1") in c.text, within=15)
        await post_escaped(
            peer,
            ob.group_message(
                self_id=SELF_ID,
                group_id=840_002,
                user_id=702,
                card=f"坏名片{LONE_SURROGATE}",
                message=[ob.at(SELF_ID), ob.text(f" {tag('sur2')}我的名片有点怪")],
            ),
        )
        await peer.wait_for_call("send_group_msg", lambda c: tag("sur2") in c.text, within=15)
        for n in (1, 2):
            await post_escaped(
                peer,
                ob.group_message(
                    self_id=SELF_ID,
                    group_id=840_003,
                    user_id=703,
                    nickname=huge,
                    message=[ob.at(SELF_ID), ob.text(f" {tag(f'huge{n}')}我的昵称很长")],
                ),
            )
            await peer.wait_for_call("send_group_msg", lambda c, n=n: tag(f"huge{n}") in c.text, within=15)
        (request,) = model.requests_for("huge2")
        assert huge not in request.all_text
        assert "长" * 60 in request.all_text  # the name is cut, not lost
    assert bot.stop() == 0
    # Everything reached the database, the odd characters replaced, none of it rejected.
    db = sqlite3.connect(bot.data_dir / DB_FILENAME)
    try:
        rows = db.execute(
            "SELECT chat_id, sender_name, text FROM messages "
            f"WHERE chat_id LIKE 'qq:{SELF_ID}:group:84000%' AND from_self = 0"
        ).fetchall()
    finally:
        db.close()
    texts = {text for _, _, text in rows}
    assert any(tag("sur1") in t and "\ufffd" in t for t in texts)
    names = {chat: name for chat, name, _ in rows}
    assert names[f"qq:{SELF_ID}:group:840002"] == "坏名片\ufffd"
    assert len(names[f"qq:{SELF_ID}:group:840003"]) <= 64
    assert not bot.wait_for_log("store.write_rejected", timeout=0, count=0)


# -- a confirmed reminder -----------------------------------------------------------------------------

REMINDER_CONFIG = (
    CONFIG
    + """
[runtime]
save_interval_ms = 10000
"""
)


async def test_a_confirmed_reminder_survives_a_kill_right_after_the_confirmation(
    start_bot: StartBot,
    openai_server: ScriptedOpenAIServer,
) -> None:
    model = TaggedModel(openai_server)
    model.on(
        "rem",
        steps(
            tool_call("schedule_message", delay_minutes=4 / 60, text=f"该喝水了{tag('rem')}"),
            reply_text(f"好，四秒后提醒你{tag('rem')}"),
        ),
    )
    first = start_bot(model=openai_server, config=REMINDER_CONFIG, env=ENV)
    async with connected_peer(first, self_id=SELF_ID) as peer:
        await peer.say_in_private(604, f"{tag('rem')}四秒后提醒我喝水")
        await peer.wait_for_call("send_private_msg", lambda c: "四秒后提醒你" in c.text, within=15)
        first.kill()  # SIGKILL, the moment the confirmation is out
    assert first.returncode == -9

    second = start_bot(model=openai_server, config=REMINDER_CONFIG, env=ENV)
    async with connected_peer(second, self_id=SELF_ID) as peer:
        reminder = await peer.wait_for_call("send_private_msg", lambda c: "该喝水了" in c.text, within=15)
        assert reminder.params["user_id"] == 604
    assert second.stop() == 0
