"""``kill -9`` under a flood loses nothing the bot had read: the inbound journal and its replay.

The real ``bot.py`` is sent 2,500 messages over 50 groups as fast as a OneBot peer can send them
(several times what it ingests per second), killed with SIGKILL a moment after the last frame, and
started again on the same data directory. Every message the peer sent must then be in the SQLite
file, each once; the replay must have delivered exactly the ones the kill had left unstored.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.conftest import TEST_API_KEY
from tests.e2e.live import TaggedModel, connected_peer, reply_text, steps, tag
from tests.faults.kill_flood import flood_kill_restart, stored_rows
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio, pytest.mark.timeout(120)]

MESSAGES = 2_500
GROUPS = 50


async def test_kill_9_under_a_flood_loses_no_message_the_bot_had_read(tmp_path: Path) -> None:
    run = await flood_kill_restart(tmp_path, count=MESSAGES, groups=GROUPS, read_wait=1.0)
    print(
        f"sent {len(run.sent)} in {run.send_seconds:.2f} s; stored at the kill {len(run.after_kill)}; "
        f"after the restart {len(run.after_restart)}; replay {run.replayed}"
    )
    assert run.restarted_exit == 0
    # The flood outran the bot: the kill found much of it not yet in SQLite (else this proves nothing).
    assert run.lost_at_kill > 0
    missing = run.sent - set(run.after_restart)
    assert not missing, f"{len(missing)} of {len(run.sent)} messages lost, e.g. {sorted(missing)[:3]}"
    twice = [key for key, n in Counter(run.after_restart).items() if n > 1]
    assert not twice
    # Exactly the unstored ones went through the runtime again: nothing was ingested twice.
    assert run.replayed["delivered"] + run.replayed["stored_only"] == len(run.sent - set(run.after_kill))


SELF_ID = 10_000
GROUP = 810_001
ANSWER_CONFIG = """
[store]
flush_interval_ms = 2000

[outbound]
max_per_minute = 600
burst = 100
"""


async def test_an_addressed_message_a_kill_left_unstored_is_answered_once_after_the_restart(
    tmp_path: Path, openai_server: ScriptedOpenAIServer
) -> None:
    env = {
        "GREYWIND_LLM_BASE_URL": openai_server.base_url,
        "GREYWIND_LLM_MODEL": "scripted",
        "GREYWIND_LLM_API_KEY": TEST_API_KEY,
    }

    def start_bot(run: str) -> BotProcess:
        return BotProcess(tmp_path / run, env=env, config=ANSWER_CONFIG, data_dir=tmp_path / "data").start()

    model = TaggedModel(openai_server)
    model.on("a1", steps(reply_text(f"好的{tag('a1')}")))
    # The first run's model is slow for k1: the kill lands after the bot read the message and before
    # it answered or stored it (the writer commits every 2 s here).
    model.on("k1", steps({"text": f"来了{tag('k1')}", "delay": 10}, reply_text(f"来了{tag('k1')}")))

    first = start_bot("run0")
    try:
        async with connected_peer(first, self_id=SELF_ID) as peer:
            a1 = await peer.say_in_group(GROUP, 601, ob.at(SELF_ID), f" {tag('a1')}在吗")
            await peer.wait_for_call("send_group_msg", lambda c: tag("a1") in c.text, within=15)
            await asyncio.sleep(2.5)  # a1 and its answer are committed
            k1 = await peer.say_in_group(GROUP, 601, ob.at(SELF_ID), f" {tag('k1')}帮我看看这个")
            deadline = time.monotonic() + 15
            while not model.requests_for("k1") and time.monotonic() < deadline:  # noqa: ASYNC110 - a thread
                await asyncio.sleep(0.01)
            assert model.requests_for("k1"), "the first run never asked the model about k1"
            first.kill()
    finally:
        first.kill()
    stored = {message_id for _, message_id in stored_rows(tmp_path / "data")}

    second = start_bot("run1")
    try:
        async with connected_peer(second, self_id=SELF_ID) as peer:
            await peer.wait_for_call("send_group_msg", lambda c: tag("k1") in c.text, within=20)
            await asyncio.sleep(2.0)  # time for a second answer, were one coming
            assert [tag("k1") in c.text for c in peer.sends()] == [True]  # k1 once; a1 not again
    finally:
        assert second.stop() == 0
    assert len(model.requests_for("a1")) == 1
    # k1 was not in SQLite when the bot was killed (a1 was); after the restart it is, once.
    assert str(a1) in stored
    assert str(k1) not in stored
    assert Counter(stored_rows(tmp_path / "data"))[(f"qq:{SELF_ID}:group:{GROUP}", str(k1))] == 1
