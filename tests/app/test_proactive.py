"""Speaking later: a ``wait`` comes back with no new input; a reminder survives a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.store.errors import StoreWriteError
from tests.app.conftest import FakeClock, make_config, running
from tests.support.fake_edge import FakeOutbound
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def test_wait_brings_the_bot_back_later_without_new_input(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(
        call("wait", seconds=60, reason="等他把话说完"), call("reply", text="说完了吗？我在听")
    )
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("灰风 我跟你说个事", addressed=True)
        await h.settle()
        assert h.outbound.sent == []
        assert len(openai_server.chat_requests) == 1
        await h.advance(30)
        assert len(openai_server.chat_requests) == 1  # nothing runs while it waits
        stats = h.runtime.statistics()
        assert stats.waiting.waiting == 1
        assert stats.loop.running == 0  # parked in the scheduler, not in a sleeping task
        await h.advance(31)
        assert h.outbound.texts() == ["说完了吗？我在听"]
    resumed = openai_server.chat_requests[1].messages
    tool_results = [m["content"] for m in resumed if m.get("role") == "tool"]
    assert any("resumed after waiting" in text for text in tool_results)


async def test_a_reminder_fires_after_a_restart_without_asking_the_model_again(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(
        call("schedule_message", text="该喝水了", delay_minutes=10),
        call("reply", text="好，十分钟后提醒你"),
    )
    config = make_config(openai_server)
    clock = FakeClock()
    async with running(config, data_dir, clock=clock) as h:
        await h.say("灰风 十分钟后提醒我喝水", addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["好，十分钟后提醒你"]
        await h.advance(60)
    requests = len(openai_server.chat_requests)
    clock.advance(11 * 60)
    async with running(config, data_dir, clock=clock) as h:
        await h.settle()
        assert h.outbound.texts("group:500") == ["提醒：该喝水了"]
        await h.advance(3600)
        assert h.outbound.texts("group:500") == ["提醒：该喝水了"]  # once
    assert len(openai_server.chat_requests) == requests


async def test_a_reminder_is_only_for_the_chat_that_asked(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(call("schedule_message", text="开会", delay_minutes=1), call("reply", text="好"))
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("灰风 一分钟后提醒大家开会", chat="group:777", addressed=True)
        await h.settle()
        await h.say("闲聊", chat="group:500")
        await h.advance(61)
        assert h.outbound.texts("group:777") == ["好", "提醒：开会"]
        assert h.outbound.texts("group:500") == []


async def test_a_reminder_due_before_the_account_reconnects_waits_for_the_connection(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(call("schedule_message", text="该出门了", delay_minutes=1), call("reply", text="好"))
    config = make_config(openai_server)
    clock = FakeClock()
    async with running(config, data_dir, clock=clock) as h:
        await h.say("灰风 一分钟后提醒我出门", chat="private:42")
        await h.settle()
    clock.advance(120)
    outbound = FakeOutbound(connected=False)
    async with running(config, data_dir, clock=clock, outbound=outbound) as h:
        await h.advance(20)
        assert outbound.sent == []
        outbound.connected = True
        await h.advance(10)
        assert outbound.texts("private:42") == ["提醒：该出门了"]


async def test_a_reminder_the_platform_did_not_answer_is_sent_again(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    # The send timed out, and no echo of it came back (the edge reports a part whose echo came back
    # as sent): a promised reminder lost is worse than one read twice.
    openai_server.push(call("schedule_message", text="开会", delay_minutes=1), call("reply", text="好"))
    outbound = FakeOutbound()
    async with running(make_config(openai_server), data_dir, outbound=outbound) as h:
        await h.say("灰风 一分钟后提醒大家开会", addressed=True)
        await h.settle()
        outbound.unanswered = 1
        await h.advance(61)
        await h.advance(60)
        assert [s.text for s in outbound.unconfirmed] == ["提醒：开会"]
        assert outbound.texts() == ["好", "提醒：开会"]


async def test_a_reminder_is_on_disk_after_the_periodic_save_before_any_stop(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(call("schedule_message", text="交周报", delay_minutes=30), call("reply", text="好"))
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("灰风 半小时后提醒我交周报", chat="private:42")
        await h.settle()
        await h.runtime.maintenance.save()
        await h.runtime.writer.flush()
        stored = [e for e in await h.runtime.store.load_events() if e.kind == "reminder"]
        assert [(e.chat_id, e.state, e.payload["text"]) for e in stored] == [
            ("private:42", "scheduled", "交周报")
        ]


async def test_a_reminder_the_store_cannot_keep_is_not_promised(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(call("schedule_message", text="交周报", delay_minutes=1), call("reply", text="好的"))

    async def disk_full(_record: object) -> None:
        raise StoreWriteError("write failed: database or disk is full")

    async with running(make_config(openai_server), data_dir) as h:
        h.runtime.store.save_event = disk_full  # type: ignore[method-assign]
        await h.say("灰风 一分钟后提醒我交周报", addressed=True)
        await h.settle()
        tool_results = [
            m["content"] for m in openai_server.chat_requests[1].messages if m.get("role") == "tool"
        ]
        assert any("没能保存" in text for text in tool_results), tool_results
        del h.runtime.store.save_event
        await h.advance(120)
        assert "提醒：交周报" not in h.outbound.texts()  # withdrawn, as the model was told
