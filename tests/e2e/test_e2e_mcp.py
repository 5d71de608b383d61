"""MCP in the real process: bot.py with an MCP server (the tests' sample server, a stdio child) and a
broken one in its config. A member's @ in an allowed group makes the model call the server's tool,
the answer reaches the group, ``/status full`` names both servers, and a stop leaves no child behind."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.conftest import TEST_API_KEY
from tests.e2e.live import connected_peer, own_errors
from tests.mcp.conftest import PY, ROOT
from tests.support import onebot_events as ob
from tests.support.openai_server import RecordedRequest, ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
GROUP = 800_950
SUPERUSER = 42

CONFIG = f"""
[mcp]
reconnect_min_ms = 50
reconnect_max_ms = 400
ping_interval_ms = 200

[[mcp.servers]]
name = "sample"
command = "{PY}"
args = ["-m", "tests.mcp.sample_server", "stdio"]
env = {{PYTHONPATH = "{ROOT}"}}
timeout_s = 3
start_timeout_s = 20
allow = [{GROUP}]

[[mcp.servers]]
name = "broken"
command = "/nonexistent/mcp-server"
allow = [{GROUP}]
"""


def tool_messages(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.messages if m.get("role") == "tool"]


def answer(request: RecordedRequest) -> dict[str, Any] | None:
    if "进程" not in request.last_user_text:
        return None
    if tool_messages(request):
        return {"text": "查到了"}
    return {"tool_calls": [{"name": "sample__pid", "arguments": {}}]}


async def test_a_member_gets_an_answer_made_with_an_mcp_tool_and_a_stop_leaves_no_child(
    tmp_path: Path,
) -> None:
    with ScriptedOpenAIServer({"default": {"text": "嗯"}}) as model:
        model.respond_with(answer)
        bot = BotProcess(
            tmp_path,
            config=CONFIG,
            env={
                "GREYWIND_LLM_BASE_URL": model.base_url,
                "GREYWIND_LLM_MODEL": "scripted",
                "GREYWIND_LLM_API_KEY": TEST_API_KEY,
                "SUPERUSERS": f'["{SUPERUSER}"]',
            },
        ).start()
        try:
            await bot.await_log("mcp_server_up", within=30)
            async with connected_peer(bot, self_id=SELF_ID) as peer:
                await peer.say_in_group(GROUP, 700, ob.at(SELF_ID), " 看看进程")
                answered = await peer.wait_for_call("send_group_msg", within=15)
                assert answered.text == "查到了"
                sent = len(peer.calls)
                await peer.say_in_private(SUPERUSER, "/status full")
                # A long answer is sent in parts: the part with the MCP lines.
                status = await peer.wait_for_call(
                    "send_private_msg", lambda call: "MCP " in call.text, within=10, after=sent
                )
                assert "MCP sample：在线" in status.text
                assert "MCP broken：" in status.text
            assert bot.stop(timeout=15) == 0
        finally:
            with contextlib.suppress(Exception):
                bot.stop(timeout=3)
            bot.kill()
    asked = next(r for r in model.chat_requests if tool_messages(r))
    (framed,) = tool_messages(asked)
    assert framed.startswith("〔外部工具 sample__pid 返回的数据")
    child = int(framed.splitlines()[1])
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # the server's process went with the bot
    assert own_errors(bot) == []
    downs = [r for r in bot.records() if r.get("event") == "mcp_server_down"]
    assert downs
    assert {r["server"] for r in downs} == {"broken"}
