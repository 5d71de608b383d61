"""MCP servers as real subprocesses behind a real ToolRegistry: what is offered, to whom, what a call
gives back, and what happens when a server hangs, dies or never starts."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import types
from structlog.testing import capture_logs

from runtime.config import parse_config
from runtime.lifetime import Lifetime
from runtime.mcp import McpHub, McpServer
from runtime.mcp.access import permission
from runtime.mcp.results import CLOSE
from runtime.tools import ToolContext, ToolErrorKind, ToolRegistry, ToolSpec
from tests.mcp.conftest import FAST, ROOT, HttpServer, stdio_server, time_server

pytestmark = pytest.mark.asyncio


def builtin(name: str) -> ToolSpec:
    return ToolSpec(name, "a built-in tool", lambda args, ctx: "built-in")


@asynccontextmanager
async def hub_running(
    servers: list[dict[str, Any]], *, env: dict[str, str] | None = None, builtins: tuple[str, ...] = ()
) -> AsyncIterator[tuple[McpHub, ToolRegistry]]:
    config = parse_config({"mcp": {**FAST, "servers": servers}})
    tools = ToolRegistry()
    for name in builtins:
        tools.register(builtin(name))
    hub = McpHub(config.mcp, tools, superusers={"1"}, env=env or {})
    async with anyio.create_task_group() as tg:
        lifetime = Lifetime("test", tg)
        hub.start(lifetime)
        try:
            yield hub, tools
        finally:
            await lifetime.aclose()


async def until(check: Callable[[], bool], within: float = 15.0) -> None:
    """Poll ``check`` (the state of another process: no event to wait on) until it holds."""
    with anyio.fail_after(within):
        while not check():  # noqa: ASYNC110
            await anyio.sleep(0.02)


def state(hub: McpHub, name: str) -> dict[str, Any]:
    return next(s for s in hub.snapshot() if s["name"] == name)


def ctx(server: str = "sample", chat: str = "group:500") -> ToolContext:
    return ToolContext(chat_id=chat, permissions=frozenset({"chat", permission(server)}))


async def test_a_stdio_servers_tools_are_offered_by_prefixed_names_and_a_call_comes_back_framed() -> None:
    async with hub_running([stdio_server(allow=[500])]) as (hub, tools):
        await until(lambda: state(hub, "sample")["state"] == "up")
        offered = state(hub, "sample")["tools"]
        assert {"sample__echo", "sample__add", "sample__hang", "sample__pid"} <= set(offered)
        assert all(name in tools for name in offered)
        result = await tools.invoke("sample__echo", {"text": "你好"}, ctx())
        assert result.ok, result.message
        assert "echo: 你好" in result.content
        assert result.content.startswith("〔外部工具 sample__echo 返回的数据")
        assert result.content.endswith(CLOSE)
        bad = await tools.invoke("sample__add", {"a": "one"}, ctx())
        assert bad.error is ToolErrorKind.INVALID_ARGUMENTS


async def test_tools_are_for_the_allowed_chats_only() -> None:
    servers = [stdio_server(allow=[500, "superusers"])]
    async with hub_running(servers) as (hub, tools):
        await until(lambda: state(hub, "sample")["state"] == "up")
        assert hub.grants("qq:10001:group:500") == {permission("sample")}
        assert hub.grants("group:500") == {permission("sample")}
        assert hub.grants("qq:10001:group:600") == frozenset()
        assert hub.grants("qq:10001:private:1") == {permission("sample")}  # a superuser
        assert hub.grants("qq:10001:private:42") == frozenset()
        # Without the grant the tool is neither listed nor callable.
        assert "sample__echo" not in [s.name for s in tools.list({"chat"})]
        denied = await tools.invoke(
            "sample__echo", {"text": "x"}, ToolContext(chat_id="group:600", permissions=frozenset({"chat"}))
        )
        assert denied.error is ToolErrorKind.PERMISSION_DENIED


async def test_no_allow_means_no_chat() -> None:
    async with hub_running([stdio_server()]) as (hub, _):
        await until(lambda: state(hub, "sample")["state"] == "up")
        assert hub.grants("group:500") == frozenset()
        assert hub.grants("qq:10001:private:1") == frozenset()


async def test_a_tool_with_side_effects_needs_a_grant() -> None:
    declared = [stdio_server(allow=[500], side_effect=["echo"])]
    async with hub_running(declared) as (hub, tools):
        await until(lambda: state(hub, "sample")["state"] == "up")
        withheld = {w["tool"]: w["why"] for w in state(hub, "sample")["withheld"]}
        assert "wipe" in withheld  # the server declares it destructive
        assert "echo" in withheld  # the operator marked it
        assert "sample__wipe" not in tools
        assert "sample__echo" not in tools
        assert "sample__add" in tools
    granted = [stdio_server(allow=[500], grant=["wipe"])]
    async with hub_running(granted) as (hub, tools):
        await until(lambda: state(hub, "sample")["state"] == "up")
        assert "sample__wipe" in tools
        spec = tools.get("sample__wipe")
        assert spec is not None
        assert spec.side_effect


async def test_a_tool_the_server_adds_while_running_is_offered_when_it_says_so() -> None:
    async with hub_running([stdio_server(allow=[500])]) as (hub, tools):
        await until(lambda: state(hub, "sample")["state"] == "up")
        assert "sample__grown" not in tools
        assert (await tools.invoke("sample__grow", {}, ctx())).ok
        await until(lambda: "sample__grown" in tools, within=5)
        assert "new" in (await tools.invoke("sample__grown", {}, ctx())).content
        assert "sample__echo" in tools


async def test_a_name_taken_by_a_built_in_tool_is_not_offered_and_says_why() -> None:
    async with hub_running([stdio_server(allow=[500])], builtins=("sample__echo",)) as (hub, tools):
        await until(lambda: state(hub, "sample")["state"] == "up")
        withheld = {w["tool"]: w["why"] for w in state(hub, "sample")["withheld"]}
        assert withheld["echo"] == "the name sample__echo is taken"
        result = await tools.invoke("sample__echo", {}, ctx())
        assert result.content == "built-in"  # the built-in tool is still the one called


async def test_results_are_capped_and_cannot_close_their_own_frame() -> None:
    async with hub_running([stdio_server(allow=[500], max_result_chars=300)]) as (hub, tools):
        await until(lambda: state(hub, "sample")["state"] == "up")
        big = await tools.invoke("sample__big", {}, ctx())
        assert big.ok
        assert len(big.content) < 600
        assert "[truncated: showing 300 of 50000 characters]" in big.content
        injected = await tools.invoke("sample__inject", {}, ctx())
        assert injected.content.count(CLOSE) == 1
        assert injected.content.endswith(CLOSE)
        assert "/disable" in injected.content  # kept as data, between the markers


async def test_a_servers_error_is_a_failed_result_with_its_words_framed_as_data() -> None:
    async with hub_running([stdio_server(allow=[500])]) as (hub, tools):
        await until(lambda: state(hub, "sample")["state"] == "up")
        failed = await tools.invoke("sample__fail", {}, ctx())
        assert not failed.ok
        assert failed.error is ToolErrorKind.EXCEPTION
        text = failed.observation_text()
        assert "〔外部工具 sample__fail 返回的数据（不可信" in text
        assert "/disable" in text
        assert text.endswith(CLOSE)


async def test_a_tool_whose_schema_would_flood_the_prompt_is_not_offered() -> None:
    config = parse_config({"mcp": {"servers": [stdio_server(allow=[500])]}})
    tools = ToolRegistry()
    server = McpServer(config.mcp.servers[0], tools, reconnect_min=1, reconnect_max=1, ping_interval=1)
    huge = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(100)},
    }
    small = {"type": "object", "properties": {"q": {"type": "string"}}}
    server._register(
        [types.Tool(name="huge", input_schema=huge), types.Tool(name="small", input_schema=small)]
    )
    assert "sample__small" in tools
    assert "sample__huge" not in tools
    assert dict(server.snapshot().withheld)["huge"] == "its argument schema is over 8000 characters"


async def test_a_hung_call_times_out_while_other_calls_are_answered() -> None:
    async with hub_running([stdio_server(allow=[500], timeout_s=3)]) as (hub, tools):
        await until(lambda: state(hub, "sample")["state"] == "up")
        results: dict[str, Any] = {}

        async def hung() -> None:
            results["hang"] = await tools.invoke("sample__hang", {}, ctx())

        async with anyio.create_task_group() as tg:
            started = time.monotonic()
            tg.start_soon(hung)
            await anyio.sleep(0.1)
            echo = await tools.invoke("sample__echo", {"text": "still here"}, ctx(chat="group:501"))
            echo_took = time.monotonic() - started
        hang_took = time.monotonic() - started
        assert echo.ok
        assert echo_took < 1.0  # answered while the other call hangs
        assert results["hang"].error is ToolErrorKind.TIMEOUT, results["hang"]
        assert 2.9 < hang_took < 6.0
        assert state(hub, "sample")["state"] == "up"  # a slow call is not a dead server
        # The server was told the call was abandoned: it does not run on there.
        running = await tools.invoke("sample__hanging", {}, ctx())
        assert running.content.splitlines()[1] == "0"


async def test_a_killed_server_vanishes_and_comes_back_with_a_new_process() -> None:
    with capture_logs() as logs:
        async with hub_running([stdio_server(allow=[500])]) as (hub, tools):
            await until(lambda: "sample__pid" in tools)
            first = (await tools.invoke("sample__pid", {}, ctx())).content
            pid = int(first.splitlines()[1])
            os.kill(pid, signal.SIGKILL)
            await until(lambda: "sample__pid" not in tools, within=5)
            assert state(hub, "sample")["state"] in ("down", "connecting")
            await until(lambda: "sample__pid" in tools, within=10)
            second = (await tools.invoke("sample__pid", {}, ctx())).content
            assert int(second.splitlines()[1]) != pid
    events = [(e["event"], e.get("server")) for e in logs if e.get("server") == "sample"]
    assert events[:3] == [
        ("mcp_server_up", "sample"),
        ("mcp_server_down", "sample"),
        ("mcp_server_up", "sample"),
    ]


async def test_a_broken_server_holds_up_nothing_and_keeps_being_retried() -> None:
    servers = [
        {"name": "missing", "command": "/nonexistent/mcp-server", "timeout_s": 1},
        {"name": "exits", "command": "python3", "args": ["-c", "import sys; sys.exit(3)"], "timeout_s": 1},
        {"name": "silent", "command": "python3", "args": ["-c", "import time; time.sleep(60)"],
         "start_timeout_s": 5},
        stdio_server(allow=[500]),
    ]  # fmt: skip
    started = time.monotonic()
    async with hub_running(servers) as (hub, tools):
        assert time.monotonic() - started < 1.0  # start returns at once, the silent one still starting
        await until(lambda: state(hub, "sample")["state"] == "up")
        await until(lambda: state(hub, "missing")["last_error"] is not None)
        await until(lambda: state(hub, "exits")["last_error"] is not None)
        assert state(hub, "missing")["state"] in ("down", "connecting")
        assert "No such file" in state(hub, "missing")["last_error"]
        attempts = next(s for s in hub.snapshots() if s.name == "exits")
        assert attempts.connects == 0
        lines = hub.status_lines()
        assert any(line.startswith("MCP missing：") for line in lines)
        assert any(line.startswith("MCP sample：在线") for line in lines)
        assert not [name for name in tools.list() if name.name.startswith(("missing__", "exits__"))]


async def test_a_disabled_server_is_never_started() -> None:
    async with hub_running([stdio_server(allow=[500], enabled=False)]) as (hub, tools):
        await anyio.sleep(0.3)
        assert state(hub, "sample")["state"] == "disabled"
        assert len(tools) == 0
        assert hub.grants("group:500") == frozenset()


async def test_a_child_gets_the_variables_named_for_it_and_none_of_the_bots_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GREYWIND_LLM_API_KEY", "sk-the-bots-own")
    servers = [stdio_server(allow=[500], env_from={"SAMPLE_KEY": "GREYWIND_MCP_TEST_KEY"})]
    async with hub_running(servers, env={"GREYWIND_MCP_TEST_KEY": "k-123"}) as (hub, tools):
        await until(lambda: state(hub, "sample")["state"] == "up")
        given = await tools.invoke("sample__env", {"name": "SAMPLE_KEY"}, ctx())
        assert given.content.splitlines()[1] == "k-123"
        kept = await tools.invoke("sample__env", {"name": "GREYWIND_LLM_API_KEY"}, ctx())
        assert kept.content.splitlines()[1] == "(none)"
    async with hub_running(servers, env={}) as (hub, tools):
        await until(lambda: state(hub, "sample")["last_error"] is not None)
        assert "GREYWIND_MCP_TEST_KEY (for SAMPLE_KEY) is not set" in state(hub, "sample")["last_error"]


async def test_an_http_server_with_headers_from_the_environment(http_server: HttpServer) -> None:
    servers = [http_server.config(allow=[500], headers_env={"X-Token": "GREYWIND_MCP_TEST_TOKEN"})]
    async with hub_running(servers, env={"GREYWIND_MCP_TEST_TOKEN": "s3cret"}) as (hub, tools):
        await until(lambda: state(hub, "web")["state"] == "up")
        echo = await tools.invoke("web__echo", {"text": "over http"}, ctx("web"))
        assert "echo: over http" in echo.content
        header = await tools.invoke("web__header", {"name": "x-token"}, ctx("web"))
        assert "s3cret" in header.content


async def test_an_http_server_without_its_header_variable_stays_down(http_server: HttpServer) -> None:
    servers = [http_server.config(allow=[500], headers_env={"X-Token": "GREYWIND_MCP_TEST_TOKEN"})]
    async with hub_running(servers, env={}) as (hub, tools):
        await until(lambda: state(hub, "web")["last_error"] is not None)
        assert "GREYWIND_MCP_TEST_TOKEN" in state(hub, "web")["last_error"]
        assert "web__echo" not in tools


async def test_a_killed_http_server_comes_back_when_it_is_restarted(http_server: HttpServer) -> None:
    async with hub_running([http_server.config(allow=[500])]) as (_, tools):
        await until(lambda: "web__pid" in tools)
        first = (await tools.invoke("web__pid", {}, ctx("web"))).content.splitlines()[1]
        http_server.kill()
        await until(lambda: "web__pid" not in tools, within=5)
        http_server.start()
        await until(lambda: "web__pid" in tools, within=10)
        second = (await tools.invoke("web__pid", {}, ctx("web"))).content.splitlines()[1]
        assert second != first


async def test_the_published_time_server() -> None:
    async with hub_running([time_server(allow=["private"])]) as (hub, tools):
        await until(lambda: state(hub, "time")["state"] == "up", within=20)
        assert {"time__get_current_time", "time__convert_time"} <= set(state(hub, "time")["tools"])
        result = await tools.invoke(
            "time__get_current_time", {"timezone": "Asia/Shanghai"}, ctx("time", "qq:10001:private:42")
        )
        assert result.ok, result.message
        assert '"timezone": "Asia/Shanghai"' in result.content


async def test_a_frozen_server_is_given_up_on_and_started_anew() -> None:
    with capture_logs() as logs:
        async with hub_running([stdio_server(allow=[500], timeout_s=1)]) as (_, tools):
            await until(lambda: "sample__pid" in tools)
            pid = int((await tools.invoke("sample__pid", {}, ctx())).content.splitlines()[1])
            frozen = await tools.invoke("sample__freeze", {}, ctx())
            assert frozen.error is ToolErrorKind.TIMEOUT
            await until(lambda: "sample__pid" not in tools, within=5)  # its pings went unanswered
            await until(lambda: "sample__pid" in tools, within=20)
            again = int((await tools.invoke("sample__pid", {}, ctx())).content.splitlines()[1])
            assert again != pid
    downs = [e for e in logs if e["event"] == "mcp_server_down"]
    assert "ping not answered within 1 s" in downs[0]["error"]


async def test_a_server_that_falls_over_right_after_each_start_keeps_backing_off() -> None:
    env = {"PYTHONPATH": str(ROOT), "SAMPLE_EXIT_AFTER_LISTING": "1"}
    with capture_logs() as logs:
        async with hub_running([stdio_server(allow=[500], env=env)]) as (_, _tools):
            await until(lambda: sum(e["event"] == "mcp_server_down" for e in logs) >= 3, within=40)
    events = [e for e in logs if e["event"] in ("mcp_server_up", "mcp_server_down")][:6]
    assert [e["event"] for e in events] == ["mcp_server_up", "mcp_server_down"] * 3
    assert [e["retry_in_s"] for e in events if e["event"] == "mcp_server_down"] == [0.05, 0.1, 0.2]


async def test_reconnects_back_off_exponentially_up_to_the_cap() -> None:
    servers = [{"name": "missing", "command": "/nonexistent/mcp-server"}]
    with capture_logs() as logs:
        async with hub_running(servers) as (_, _tools):
            await until(lambda: sum(e["event"] == "mcp_server_down" for e in logs) >= 6, within=10)
    waits = [e["retry_in_s"] for e in logs if e["event"] == "mcp_server_down"][:6]
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.4, 0.4]  # FAST: 50 ms doubling, capped at 400 ms
