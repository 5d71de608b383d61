"""One MCP server, kept connected: its session, its tools in the registry while it is up, its state.

:meth:`McpServer.run` is the server's supervisor, one background task for as long as the bot runs:
connect (start the child process, or open the HTTP session), initialise and list the tools within
``start_timeout_s``, register them, then ping every ``ping_interval_ms`` (and list the tools again
when the server says they changed). A start that fails or takes too long, a connection that breaks,
a child that exits and a ping not answered within ``timeout_s`` all end the session the same way:
its tools are removed from the registry at once (a log line ``mcp_server_down``), and after a wait
that doubles from ``reconnect_min_ms`` up to ``reconnect_max_ms`` (from the start again once a
session has lasted ``reconnect_max_ms``) a new process or HTTP session is started and initialised
from scratch; its tools return with ``mcp_server_up``. Nothing here is awaited by start-up or by
any chat: the task runs beside them, and a call reaches the session only through the registry,
which cuts it off after ``timeout_s`` (the episode goes on with the failure); the SDK then sends
the server ``notifications/cancelled`` for it, so a hung call does not run on there.

The child's stderr goes to ``<data dir>/mcp/<server>.log`` (moved to ``.log.1`` past 4 MB at a start).
The child process gets a minimal environment (the SDK's: ``PATH``, ``HOME``, ...) plus the server's
``env`` and the variables ``env_from`` names (read from the bot's environment when the child starts),
never the rest of the bot's own (its model keys stay with the bot). HTTP headers come from the
environment variables ``headers_env`` names, read when the session is opened.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
import structlog
from mcp import ClientSession, MCPError, StdioServerParameters, types
from mcp.client import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from runtime.config.mcp import McpServerConfig
from runtime.mcp.access import permission
from runtime.mcp.names import tool_name
from runtime.mcp.results import FRAME_ROOM, McpToolFailed, framed, result_text
from runtime.tools import ToolContext, ToolRegistry, ToolSpec, ToolSpecError

__all__ = ["McpServer", "ServerSnapshot", "ServerState"]

log = structlog.get_logger("greywind.mcp")

# A description longer than this is cut: it is the server's text in every prompt that offers the tool.
MAX_DESCRIPTION = 500
# A tool's argument schema is in every prompt that offers it too: one larger than this is not offered.
MAX_SCHEMA = 8_000
# A child's stderr goes to <data dir>/mcp/<server>.log; one over this size is moved to .log.1 at a start.
STDERR_LOG_MAX = 4 * 1024 * 1024


class ServerState(StrEnum):
    DISABLED = "disabled"  # enabled = false: never started
    CONNECTING = "connecting"  # starting or reconnecting
    UP = "up"  # initialised; its tools are offered where allowed
    DOWN = "down"  # failed or lost; waiting to reconnect


class McpServerDown(Exception):
    """A call reached a server whose session is gone (its tools are being removed)."""


@dataclass(frozen=True, slots=True)
class ServerSnapshot:
    """One server as ``/status`` and the console show it."""

    name: str
    state: ServerState
    tools: tuple[str, ...]  # offered to the model (where allowed), as the model sees them
    withheld: tuple[tuple[str, str], ...]  # (tool, why not offered)
    last_error: str | None
    since: float | None  # when the state began (wall clock)
    connects: int  # sessions initialised so far
    retry_in: float | None  # seconds until the next attempt, while down

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state.value,
            "tools": list(self.tools),
            "withheld": [{"tool": tool, "why": why} for tool, why in self.withheld],
            "last_error": self.last_error,
        }


class McpServer:
    """See the module docstring. ``env`` is where ``headers_env`` values are read (the process's)."""

    def __init__(
        self,
        config: McpServerConfig,
        tools: ToolRegistry,
        *,
        reconnect_min: float,
        reconnect_max: float,
        ping_interval: float,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
        log_dir: Path | None = None,
    ) -> None:
        self.config = config
        self._log_dir = log_dir
        self._tools = tools
        self._reconnect_min = reconnect_min
        self._reconnect_max = reconnect_max
        self._ping_interval = ping_interval
        self._env = os.environ if env is None else env
        self._clock = clock
        self._session: ClientSession | None = None
        self._disposers: list[Callable[[], None]] = []
        self._offered: tuple[str, ...] = ()
        self._withheld: tuple[tuple[str, str], ...] = ()
        self._state = ServerState.CONNECTING if config.enabled else ServerState.DISABLED
        self._since: float | None = clock()
        self._last_error: str | None = None
        self._connects = 0
        self._retry_at: float | None = None  # time.monotonic() of the next try, while down
        self._up_at = 0.0  # time.monotonic() when the session came up
        self._tools_changed = anyio.Event()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def state(self) -> ServerState:
        return self._state

    def snapshot(self) -> ServerSnapshot:
        retry = None if self._retry_at is None else max(0.0, self._retry_at - time.monotonic())
        return ServerSnapshot(
            name=self.name,
            state=self._state,
            tools=self._offered,
            withheld=self._withheld,
            last_error=self._last_error,
            since=self._since,
            connects=self._connects,
            retry_in=retry if self._state is ServerState.DOWN else None,
        )

    # -- supervision ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Keep the server connected until cancelled; see the module docstring."""
        if not self.config.enabled:
            return
        delay = self._reconnect_min
        while True:
            self._set_state(ServerState.CONNECTING)
            try:
                await self._session_once()
                error = "the session ended"
            except Exception as exc:
                error = _describe(exc)
            finally:
                self._withdraw()
            if self._state is ServerState.UP and time.monotonic() - self._up_at >= self._reconnect_max:
                # It was up a good while: the next try comes soon again. One that falls over right
                # after each start keeps backing off instead of being restarted in a tight loop.
                delay = self._reconnect_min
            self._last_error = error
            self._set_state(ServerState.DOWN)
            log.warning("mcp_server_down", server=self.name, error=error, retry_in_s=round(delay, 3))
            self._retry_at = time.monotonic() + delay
            await anyio.sleep(delay)
            self._retry_at = None
            delay = min(delay * 2, self._reconnect_max)

    async def _session_once(self) -> None:
        """One session, from the start of its transport to its end (raises why it ended)."""
        timeout = self.config.start_timeout_s
        with anyio.CancelScope() as connecting:
            # The start (process or HTTP session, initialise, list tools) is bounded; the session
            # itself is not. The scope wraps the whole exit stack, so the transports' task groups
            # nest inside it.
            connecting.deadline = anyio.current_time() + timeout
            async with AsyncExitStack() as stack:
                read, write = await self._open_transport(stack)
                session = await stack.enter_async_context(
                    ClientSession(read, write, message_handler=self._on_message)
                )
                await session.initialize()
                listed = await _list_tools(session)
                connecting.deadline = math.inf
                self._session = session
                self._tools_changed = anyio.Event()  # the list just taken is the news
                self._register(listed)
                self._connects += 1
                self._up_at = time.monotonic()
                self._set_state(ServerState.UP)
                self._last_error = None
                log.info(
                    "mcp_server_up",
                    server=self.name,
                    tools=list(self._offered),
                    withheld=[tool for tool, _ in self._withheld],
                )
                await self._keep_alive(session)
        if connecting.cancelled_caught:
            raise TimeoutError(f"no answer within {timeout:g} s while connecting")

    async def _open_transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        cfg = self.config
        if cfg.command is not None:
            env = dict(cfg.env)
            for variable, source in cfg.env_from.items():
                env[variable] = self._variable(source, f"for {variable}")
            params = StdioServerParameters(command=cfg.command, args=list(cfg.args), env=env)
            errlog = stack.enter_context(self._stderr_log())
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            return read, write
        assert cfg.url is not None
        headers = {}
        for header, variable in cfg.headers_env.items():
            headers[header] = self._variable(variable, f"for header {header}")
        client = httpx2.AsyncClient(headers=headers, timeout=_http_timeout(cfg.timeout_s))
        await stack.enter_async_context(client)
        return await stack.enter_async_context(streamable_http_client(cfg.url, http_client=client))

    def _variable(self, name: str, why: str) -> str:
        value = self._env.get(name)
        if value is None:
            raise LookupError(f"environment variable {name} ({why}) is not set")
        return value

    def _stderr_log(self) -> contextlib.AbstractContextManager[TextIO]:
        """Where the child's stderr goes: its own file in the data directory (the bot's stderr when
        there is none), so a chatty server does not fill the bot's log."""
        if self._log_dir is None:
            return contextlib.nullcontext(sys.stderr)
        self._log_dir.mkdir(parents=True, exist_ok=True)
        path = self._log_dir / f"{self.name}.log"
        with contextlib.suppress(OSError):
            if path.stat().st_size > STDERR_LOG_MAX:
                path.replace(path.with_suffix(".log.1"))
        return path.open("a", encoding="utf-8")

    async def _keep_alive(self, session: ClientSession) -> None:
        """Ping until a ping fails or is not answered in time (raises); when the server says its
        tools changed, list them again and offer the new set."""
        timeout = self.config.timeout_s
        while True:
            with anyio.move_on_after(self._ping_interval):
                await self._tools_changed.wait()
            if self._tools_changed.is_set():
                self._tools_changed = anyio.Event()
                with anyio.move_on_after(timeout) as waited:
                    listed = await _list_tools(session)
                if waited.cancelled_caught:
                    raise TimeoutError(f"tools not listed within {timeout:g} s")
                self._unregister()
                self._register(listed)
                log.info("mcp_tools_changed", server=self.name, tools=list(self._offered))
                continue
            with anyio.move_on_after(timeout) as waited:
                await session.send_ping()
            if waited.cancelled_caught:
                raise TimeoutError(f"ping not answered within {timeout:g} s")

    async def _on_message(self, message: IncomingMessage) -> None:
        """What the server sends of its own accord: only a changed tool list matters here."""
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed.set()

    def _set_state(self, state: ServerState) -> None:
        if state is not self._state:
            self._state = state
            self._since = self._clock()

    # -- the server's tools in the registry ----------------------------------------------------

    def _register(self, listed: list[types.Tool]) -> None:
        cfg = self.config
        offered: list[str] = []
        withheld: list[tuple[str, str]] = []
        seen: set[str] = set()
        for tool in listed:
            name = tool_name(cfg.name, tool.name)
            side_effect = _declares_side_effects(tool) or tool.name in cfg.side_effect
            if side_effect and tool.name not in cfg.grant:
                withheld.append((tool.name, "side effects, not granted"))
                continue
            if name in seen or name in self._tools:
                withheld.append((tool.name, f"the name {name} is taken"))
                log.warning("mcp_tool_name_taken", server=cfg.name, tool=tool.name, name=name)
                continue
            schema = tool.input_schema or {"type": "object", "properties": {}}
            if len(json.dumps(schema, ensure_ascii=False, default=str)) > MAX_SCHEMA:
                withheld.append((tool.name, f"its argument schema is over {MAX_SCHEMA} characters"))
                continue
            description = (tool.description or tool.title or tool.name).strip()[:MAX_DESCRIPTION]
            try:
                spec = ToolSpec(
                    name=name,
                    description=f"[{cfg.name}] {description}",
                    execute=partial(self._call, tool.name, name),
                    parameters=schema,
                    permissions=frozenset({permission(cfg.name)}),
                    timeout=cfg.timeout_s,
                    side_effect=side_effect,
                    max_result_chars=cfg.max_result_chars + FRAME_ROOM,
                    tags=("mcp", cfg.name),
                )
            except ToolSpecError as exc:
                withheld.append((tool.name, str(exc)))
                continue
            seen.add(name)
            self._disposers.append(self._tools.register(spec))
            offered.append(name)
        self._offered = tuple(offered)
        self._withheld = tuple(withheld)

    def _withdraw(self) -> None:
        self._session = None
        self._unregister()

    def _unregister(self) -> None:
        while self._disposers:
            self._disposers.pop()()
        self._offered = ()

    async def _call(self, mcp_name: str, name: str, args: dict[str, Any], context: ToolContext) -> str:
        """One call of the server's tool ``mcp_name`` (offered as ``name``); the registry bounds it."""
        session = self._session
        if session is None:
            raise McpServerDown(f"MCP server {self.name} is not connected")
        # Cut off (the registry's timeout, or a stop), the SDK tells the server the request is
        # cancelled, so a hung call does not keep running there.
        try:
            result = await session.call_tool(mcp_name, args)
        except MCPError as exc:  # the server's error message: its words, framed
            raise McpToolFailed(name, exc.message) from None
        text = result_text(result)
        if result.is_error:
            raise McpToolFailed(name, text)
        return framed(name, text, self.config.max_result_chars)


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever is cut off
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _declares_side_effects(tool: types.Tool) -> bool:
    """A tool whose server says it changes the world: not read-only, or destructive. A hint can
    only withhold a tool here, never offer one the operator marked (hints are the server's word)."""
    hints = tool.annotations
    if hints is None:
        return False
    return hints.read_only_hint is False or hints.destructive_hint is True


def _http_timeout(seconds: float) -> httpx2.Timeout:
    return httpx2.Timeout(seconds, read=max(seconds, 300.0))


def _describe(exc: BaseException) -> str:
    """An exception (a group's first leaf) as one short line for the log and ``/status``."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    line = f"{type(exc).__name__}: {text}" if not text.startswith(type(exc).__name__) else text
    return line if len(line) <= 300 else line[:299] + "…"
