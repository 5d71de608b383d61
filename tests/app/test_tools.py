"""The built-in tools as the model uses them: results come back in the next request."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.conftest import make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def tool_results(server: ScriptedOpenAIServer, index: int) -> list[str]:
    return [m["content"] for m in server.chat_requests[index].messages if m.get("role") == "tool"]


async def test_current_time_answers_in_the_configured_zone(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(call("current_time"), call("reply", text="下午五点二十"))
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("现在几点", chat="private:42")
        await h.settle()
        assert h.outbound.texts() == ["下午五点二十"]
    assert tool_results(openai_server, 1) == ["2025-12-29 17:20（星期一，Asia/Shanghai）"]


async def test_what_is_remembered_in_one_chat_is_not_found_from_another(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.push(
        call("remember", content="阿明的猫叫团子", scope="chat"),
        call("reply", text="记住了"),
        call("memory_search", query="团子"),
        call("reply", text="不知道"),
        call("memory_search", query="团子"),
        call("reply", text="团子"),
    )
    async with running(make_config(openai_server), data_dir) as h:
        await h.say("灰风 记住我的猫叫团子", addressed=True)
        await h.settle()
        await h.say("灰风 我的猫叫什么", chat="group:600", addressed=True)
        await h.settle()
        await h.advance(5)  # the forced budget's minimum interval in group:500
        await h.say("灰风 我的猫叫什么", addressed=True)
        await h.settle()
        assert h.outbound.texts("group:500") == ["记住了", "团子"]
    elsewhere = tool_results(openai_server, 3)
    assert len(elsewhere) == 1
    assert "团子" not in elsewhere[0]
    here = tool_results(openai_server, 5)
    assert any("阿明的猫叫团子" in text for text in here)
