"""MCP call overhead: what a call costs on top of the server's own time, over stdio and streamable HTTP.

The server is the tests' sample server (``tests/mcp/sample_server.py``, MCPServer), run as a real
subprocess: over stdio as the bot's child, over HTTP under uvicorn on a loopback port. Its tool
``slow`` sleeps ``--tool-ms`` milliseconds, the server's own time. For each transport, ``--calls``
calls (after a warm-up) are timed two ways, wall clock, median and p99:

- **through the bot**: ``ToolRegistry.invoke`` of ``sample__slow``, as an episode calls it
  (permission check, argument check against the tool's schema, timeout, the SDK round trip,
  rendering and framing the result);
- **SDK alone**: ``ClientSession.call_tool`` on the same session, for reference.

Overhead = the call's time minus the tool's own sleep; the bot's share = through the bot minus SDK
alone. The machine's load distorts every figure (the server is another process): read medians.

    .venv/bin/python bench/mcp_calls.py [--calls 200] [--tool-ms 0]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
# This file's own folder first on the path would make it the ``mcp`` package: the project's root instead.
sys.path[0] = str(ROOT)

from runtime.config import parse_config  # noqa: E402
from runtime.lifetime import Lifetime  # noqa: E402
from runtime.mcp import McpHub  # noqa: E402
from runtime.mcp.access import permission  # noqa: E402
from runtime.tools import ToolContext, ToolRegistry  # noqa: E402

WARMUP = 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _measure(server: dict[str, object], calls: int, tool_ms: int) -> dict[str, list[float]]:
    config = parse_config({"mcp": {"servers": [server], "ping_interval_ms": 3_600_000}})
    tools = ToolRegistry()
    hub = McpHub(config.mcp, tools)
    name = str(server["name"])
    context = ToolContext(chat_id="group:1", permissions=frozenset({permission(name)}))
    async with anyio.create_task_group() as tg:
        lifetime = Lifetime("bench", tg)
        hub.start(lifetime)
        with anyio.fail_after(60):
            while f"{name}__slow" not in tools:  # noqa: ASYNC110 (another process's state)
                await anyio.sleep(0.02)
        session = hub.servers[0]._session  # the SDK's session, for the reference figure
        assert session is not None
        through: list[float] = []
        alone: list[float] = []
        for i in range(WARMUP + calls):
            started = time.perf_counter()
            result = await tools.invoke(f"{name}__slow", {"ms": tool_ms}, context)
            took = time.perf_counter() - started
            assert result.ok, result.message
            started = time.perf_counter()
            await session.call_tool("slow", {"ms": tool_ms})
            raw = time.perf_counter() - started
            if i >= WARMUP:
                through.append((took - tool_ms / 1000) * 1000)
                alone.append((raw - tool_ms / 1000) * 1000)
        await lifetime.aclose()
    return {"through the bot": through, "SDK alone": alone}


def _report(transport: str, figures: dict[str, list[float]]) -> tuple[float, float]:
    for label, values in figures.items():
        print(
            f"  {transport:<6} {label:<16} overhead median {statistics.median(values):7.2f} ms"
            f"   p99 {_percentile(values, 0.99):7.2f} ms"
        )
    share = [a - b for a, b in zip(figures["through the bot"], figures["SDK alone"], strict=True)]
    return statistics.median(figures["through the bot"]), statistics.median(share)


async def main(calls: int, tool_ms: int) -> None:
    print(f"MCP call overhead on top of the tool's own {tool_ms} ms, {calls} calls each (after {WARMUP}):")
    stdio = {
        "name": "bench",
        "command": sys.executable,
        "args": ["-m", "tests.mcp.sample_server", "stdio"],
        "env": {"PYTHONPATH": str(ROOT)},
        "start_timeout_s": 60,
    }
    summary = {"stdio": _report("stdio", await _measure(stdio, calls, tool_ms))}
    port = _free_port()
    process = await anyio.open_process(
        [sys.executable, "-m", "tests.mcp.sample_server", "http", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    async with process:
        http = {"name": "bench", "url": f"http://127.0.0.1:{port}/mcp", "start_timeout_s": 60}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                break
            except OSError:
                await anyio.sleep(0.05)
        summary["http"] = _report("http", await _measure(http, calls, tool_ms))
        process.kill()
    print("summary:")
    for transport, (total, share) in summary.items():
        line = f"{total:6.2f} ms a call on top of the server's own time (the bot's part: {share:5.2f} ms)"
        print(f"  {transport:<6} {line}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--tool-ms", type=int, default=0, help="the tool's own time (it sleeps this long)")
    args = parser.parse_args()
    anyio.run(main, args.calls, args.tool_ms)
