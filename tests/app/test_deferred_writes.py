"""An @'s context writes go on beside its model request, and its reply comes after them.

Real parts: the runtime with its SQLite store in ``tmp_path``, the scripted model over HTTP. The
store's write of the topic thread and of the session waits for a gate the test holds, as a write
waits behind the writer's batches under load: the model is asked all the same, the reply waits for
the gate, and what a restart finds on disk is what it found when the writes came first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from runtime.store.errors import StoreWriteError
from runtime.store.records import OPEN_SESSION_STATES, SessionState
from tests.app.conftest import Harness, make_config, running
from tests.app.context_writes import Write, until, wrap_context_writes
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

CHAT = "group:500"
ASK = "灰风 帮我规划一下周末的露营路线"


def gate_writes(h: Harness, gate: anyio.Event, written: list[str]) -> None:
    """The store's topic-thread and session writes wait for ``gate``; each one done is noted."""

    def gated(name: str, write: Write) -> Write:
        async def wait_then_write(row: Any) -> None:
            await gate.wait()
            await write(row)
            written.append(name)

        return wait_then_write

    wrap_context_writes(h.runtime.store, gated)


async def test_the_model_is_asked_while_the_packets_writes_wait_and_the_reply_comes_after_them(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push({"text": "好呀，先说说想去哪"})
    config = make_config(openai_server)
    gate = anyio.Event()
    written: list[str] = []
    async with running(config, data_dir) as h:
        gate_writes(h, gate, written)
        try:
            await h.say(ASK, addressed=True)
            h.runtime.loop.run_due()
            asked = await until(lambda: bool(openai_server.chat_requests), within=5.0)
            assert asked, "the model request waited for the packet's writes"
            assert ASK.split(" ", 1)[1] in openai_server.chat_requests[0].last_user_text
            await anyio.sleep(0.3)
            assert written == []
            assert h.outbound.texts() == [], "the reply went out before its turn was written"
        finally:
            gate.set()
        await h.settle()
        assert h.outbound.texts() == ["好呀，先说说想去哪"]
        # The new thread, the new session, the user's turn, then the reply recorded into the session.
        assert await until(lambda: len(written) == 4)
        assert written == ["thread", "session", "session", "session"]
        store = h.runtime.store
        (thread,) = [t for t in await store.list_topic_threads(chat_id=CHAT) if t.type != "casual"]
        (session,) = await store.list_sessions(topic_thread_id=thread.id, states=OPEN_SESSION_STATES)
        assert session.recent_dialogue == (f"阿明: {ASK}", "灰风: 好呀，先说说想去哪")

    async with running(config, data_dir) as again:
        store = again.runtime.store
        (kept,) = [t for t in await store.list_topic_threads(chat_id=CHAT) if t.type != "casual"]
        assert (kept.id, kept.title, kept.chat_ids) == (thread.id, thread.title, (CHAT,))
        stored = await store.get_session(session.id)
        assert stored is not None
        assert stored.topic_thread_id == thread.id
        assert stored.state is SessionState.HANDOFF_WRITTEN  # closed at the clean stop, as before
        assert stored.recent_dialogue == (f"阿明: {ASK}", "灰风: 好呀，先说说想去哪")


async def test_a_failing_deferred_write_degrades_the_packet_and_the_reply_still_goes_out(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push({"text": "在的"}, {"text": "又在了"})
    async with running(make_config(openai_server), data_dir) as h:
        store = h.runtime.store
        write = store.upsert_topic_thread

        async def broken(thread: Any) -> None:
            raise StoreWriteError("disk full")

        store.upsert_topic_thread = broken  # type: ignore[method-assign]
        with capture_logs() as logs:
            await h.say(ASK, addressed=True)
            await h.settle()
        assert h.outbound.texts() == ["在的"]
        assert len(openai_server.chat_requests) == 1
        failed = [line for line in logs if line.get("event") == "context_part_failed"]
        assert [line["part"] for line in failed] == ["thread", "session"], failed
        assert "disk full" in failed[0]["error"]
        # Nothing half-written: no session of a thread that is not stored, no reply recorded into one.
        assert await store.list_sessions(chat_id=CHAT) == []
        assert not [line for line in logs if line.get("event") == "context_record_reply_failed"]
        assert h.runtime.context.builder.statistics().degraded == 1

        store.upsert_topic_thread = write  # type: ignore[method-assign]
        await h.advance(60)
        await h.say("灰风 露营路线再帮我看看", addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["在的", "又在了"]
        with anyio.move_on_after(5):  # the reply is recorded off the chat's path
            while len((await store.list_sessions(chat_id=CHAT))[0].recent_dialogue) < 2:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        (session,) = await store.list_sessions(chat_id=CHAT)
        assert session.recent_dialogue == ("阿明: 灰风 露营路线再帮我看看", "灰风: 又在了")
