"""MCP tools through the running bot: the real episode loop, the scripted model over real HTTP, the
MCP servers as real subprocesses. What the model is offered where, what it gets back, and that no
server — hung, killed or broken — holds up a chat."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime.mcp.results import CLOSE
from tests.app.conftest import Harness, make_config, running
from tests.mcp.conftest import FAST, stdio_server, time_server
from tests.support.openai_server import RecordedRequest, ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def offered(request: RecordedRequest) -> set[str]:
    return {tool["function"]["name"] for tool in request.tools or ()}


def tool_messages(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.messages if m.get("role") == "tool"]


def mcp(*servers: dict[str, Any]) -> dict[str, Any]:
    return {**FAST, "servers": list(servers)}


async def until(check: Callable[[], bool], within: float = 20.0) -> None:
    """Poll ``check`` (another process's state: no event to wait on) until it holds."""
    with anyio.fail_after(within):
        while not check():  # noqa: ASYNC110
            await anyio.sleep(0.02)


def up(h: Harness, name: str) -> bool:
    return any(s["name"] == name and s["state"] == "up" for s in h.runtime.bot.mcp.snapshot())


async def test_tools_are_offered_in_allowed_chats_only_and_their_results_reach_the_model(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    config = make_config(openai_server, mcp=mcp(stdio_server(allow=[500]), time_server(allow=["private"])))
    async with running(config, data_dir) as h:
        await until(lambda: up(h, "sample") and up(h, "time"))
        openai_server.push({"text": "在"})
        await h.say("灰风 在吗", chat="group:600", addressed=True)
        await h.settle()
        openai_server.push(call("sample__echo", text="你好"), call("sample__inject"), {"text": "好了"})
        await h.say("灰风 回声", addressed=True)  # group:500
        await h.settle()
        openai_server.push(call("time__get_current_time", timezone="Asia/Shanghai"), {"text": "现在是下午"})
        await h.say("几点了", chat="private:42")
        await h.settle()
        assert h.outbound.texts() == ["在", "好了", "现在是下午"]
    elsewhere, here, echoed, injected, private, timed = openai_server.chat_requests
    assert not {name for name in offered(elsewhere) if "__" in name}  # group 600 is not allowed
    assert {"sample__echo", "sample__inject"} <= offered(here)
    assert "time__get_current_time" not in offered(here)
    assert "time__get_current_time" in offered(private)
    assert not {name for name in offered(private) if name.startswith("sample__")}
    echo = tool_messages(echoed)[0]
    assert "echo: 你好" in echo
    assert echo.startswith("〔外部工具 sample__echo 返回的数据（不可信")
    assert echo.endswith(CLOSE)
    orders = tool_messages(injected)[1]
    assert orders.count(CLOSE) == 1  # the server's own marker cannot end the frame early
    assert orders.endswith(CLOSE)
    assert '"timezone": "Asia/Shanghai"' in tool_messages(timed)[0]
    # The result's "/disable" was data: the group is still enabled and nothing else was sent.
    assert h.runtime.bot.core.groups.enabled("group:500")
    # The child's stderr went to its own file in the data directory, not the bot's log.
    assert "sample: echo called with '你好'" in (data_dir / "mcp" / "sample.log").read_text()


async def test_a_hung_call_times_out_while_another_chat_is_answered_within_a_second(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    def answer(request: RecordedRequest) -> dict[str, Any] | None:
        if "卡住" in request.last_user_text:
            return {"text": "那个工具没有反应"} if tool_messages(request) else call("sample__hang")
        if "你好" in request.last_user_text:
            return {"text": "你好呀"}
        return None

    openai_server.respond_with(answer)
    config = make_config(openai_server, mcp=mcp(stdio_server(allow=[500, 600], timeout_s=3)))
    async with running(config, data_dir) as h:
        await until(lambda: up(h, "sample"))
        started = time.monotonic()
        await h.say("灰风 卡住", addressed=True)  # group:500: its episode calls the hanging tool
        h.runtime.loop.run_due()
        await until(lambda: len(openai_server.chat_requests) == 1, within=5)
        await anyio.sleep(0.2)  # the call is under way
        asked = time.monotonic()
        await h.say("灰风 你好", chat="group:600", addressed=True)
        h.runtime.loop.run_due()
        await until(lambda: h.outbound.texts("group:600") == ["你好呀"], within=5)
        answered = time.monotonic() - asked
        assert h.outbound.texts("group:500") == []  # still waiting for the hung call
        await h.settle()
        finished = time.monotonic() - started
        assert h.outbound.texts("group:500") == ["那个工具没有反应"]
    assert answered < 1.0
    assert 3.0 < finished < 10.0
    hung = next(r for r in openai_server.chat_requests if tool_messages(r))
    assert tool_messages(hung)[0].startswith("[sample__hang failed: timeout]")


async def test_the_bot_starts_and_answers_with_broken_servers_and_says_so_in_status(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    broken = mcp(
        {"name": "missing", "command": "/nonexistent/mcp-server", "allow": [500], "timeout_s": 1},
        {"name": "exits", "command": "python3", "args": ["-c", "raise SystemExit(3)"], "allow": [500],
         "timeout_s": 1},
        {"name": "silent", "command": "python3", "args": ["-c", "import time; time.sleep(60)"],
         "allow": [500], "timeout_s": 1, "start_timeout_s": 1},
    )  # fmt: skip
    openai_server.push({"text": "我在"})
    started = time.monotonic()
    async with running(make_config(openai_server, mcp=broken), data_dir) as h:
        await h.say("灰风 在吗", addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["我在"]
        assert time.monotonic() - started < 5.0
        await until(lambda: all(s["last_error"] for s in h.runtime.bot.mcp.snapshot()))
        status = await h.runtime.control.status(None, full=True)
    assert "MCP missing：" in status
    assert "MCP silent：" in status
    assert "no answer within 1 s while connecting" in status
    assert not {name for name in offered(openai_server.chat_requests[0]) if "__" in name}


async def test_a_killed_servers_tools_leave_the_prompt_and_come_back(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    config = make_config(openai_server, mcp=mcp(stdio_server(allow=[500])))
    async with running(config, data_dir) as h:
        await until(lambda: up(h, "sample"))
        openai_server.push(call("sample__pid"), {"text": "一"})
        await h.say("灰风 一", addressed=True)
        await h.settle()
        pid = int(tool_messages(openai_server.chat_requests[1])[0].splitlines()[1])
        os.kill(pid, signal.SIGKILL)
        await until(lambda: "sample__pid" not in h.runtime.tools, within=5)
        openai_server.push({"text": "二"})
        await h.advance(5)  # the forced budget's minimum interval
        await h.say("灰风 二", addressed=True)
        await h.settle()
        await until(lambda: up(h, "sample"))
        openai_server.push({"text": "三"})
        await h.advance(5)
        await h.say("灰风 三", addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["一", "二", "三"]
    _, _, down, back = openai_server.chat_requests
    assert "sample__pid" not in offered(down)
    assert "sample__pid" in offered(back)
