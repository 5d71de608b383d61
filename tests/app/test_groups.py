"""The groups the bot lives in, through the running runtime: a disabled group costs no model call and
gets no reply, its messages are kept for later, and ``/enable`` survives a restart."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from runtime.groups import GROUPS_FILE
from tests.app.conftest import FakeClock, make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

ON = "group:6000"
OFF = "group:5000"


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


async def test_a_group_not_allowed_gets_no_model_call_and_no_reply_while_an_allowed_one_does(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("我在")})
    config = make_config(openai_server, groups={"allow": [6000]})
    async with running(config, data_dir) as h:
        await h.say("灰风 在吗", chat=OFF, addressed=True)
        await h.settle()
        assert h.outbound.sent == []
        assert openai_server.chat_requests == []
        await h.say("灰风 在吗", chat=ON, addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["我在"]
        assert [s.chat_id for s in h.outbound.sent] == [ON]
        status = await h.runtime.control.status(OFF)
        assert "已停用" in status
        assert "只在 6000 群" in await h.runtime.control.status(None)


async def test_disable_stops_the_bot_in_that_group_and_enable_survives_a_restart(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("我在")})
    config = make_config(openai_server)
    clock = FakeClock()
    async with running(config, data_dir, clock=clock) as h:
        answer = await h.runtime.control.set_group(OFF, False, by="1")
        assert "已停用" in answer
        await h.say("灰风 这条先记着：密码是蓝鲸", chat=OFF, addressed=True)
        await h.settle()
        assert h.outbound.sent == []
        assert openai_server.chat_requests == []
    assert json.loads((data_dir / GROUPS_FILE).read_text(encoding="utf-8")) == {OFF: False}
    clock.advance(60)
    async with running(config, data_dir, clock=clock) as h:
        # Still disabled after the restart: the command outlived the process.
        await h.say("灰风 在吗", chat=OFF, addressed=True)
        await h.settle()
        assert h.outbound.sent == []
        assert openai_server.chat_requests == []
        await h.runtime.control.set_group(OFF, True, by="1")
    clock.advance(60)
    async with running(config, data_dir, clock=clock) as h:
        await h.say("灰风 刚才我说了什么", chat=OFF, addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["我在"]
    # What was said while the group was disabled was kept in the store, for when the group is on.
    with sqlite3.connect(data_dir / "greywind.sqlite3") as db:
        stored = [row[0] for row in db.execute("SELECT text FROM messages WHERE chat_id = ?", (OFF,))]
    assert any("密码是蓝鲸" in text for text in stored)


async def test_a_reminder_due_in_a_disabled_group_is_not_sent_there(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(
        {
            "tool_calls": [
                {"name": "schedule_message", "arguments": {"text": "该喝水了", "delay_minutes": 10}}
            ]
        },
        reply("好，十分钟后提醒你"),
    )
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("灰风 十分钟后提醒我喝水", chat=OFF, addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["好，十分钟后提醒你"]
        await h.runtime.control.set_group(OFF, False, by="1")
        await h.advance(11 * 60)
        assert h.outbound.texts() == ["好，十分钟后提醒你"]
