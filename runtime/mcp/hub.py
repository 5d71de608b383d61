"""Every configured MCP server, for the running bot: started in the background, asked per chat.

:meth:`McpHub.start` hands each enabled server's supervisor to the :class:`~runtime.lifetime.Lifetime`
and returns at once: start-up never waits for a server, and a stop cancels the supervisors (a
child process is closed, then killed). :meth:`grants` is what an episode in a chat adds to its
permissions: the servers that chat may use. :meth:`snapshot` is the state of each server for the
console; :meth:`status_lines` the same for ``/status full``. With ``data_dir``, each stdio child's
stderr goes to ``<data_dir>/mcp/<server>.log``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from runtime.config.mcp import McpConfig
from runtime.lifetime import Lifetime
from runtime.mcp.access import allows, permission
from runtime.mcp.server import McpServer, ServerSnapshot, ServerState
from runtime.tools import ToolRegistry

__all__ = ["McpHub"]

_STATE_ZH = {
    ServerState.DISABLED: "已关闭",
    ServerState.CONNECTING: "连接中",
    ServerState.UP: "在线",
    ServerState.DOWN: "离线",
}


class McpHub:
    def __init__(
        self,
        config: McpConfig,
        tools: ToolRegistry,
        *,
        superusers: Collection[str] = (),
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] | None = None,
        data_dir: Path | None = None,
    ) -> None:
        self._config = config
        self._superusers = frozenset(superusers)
        extra: dict[str, Any] = {} if clock is None else {"clock": clock}
        self.servers = tuple(
            McpServer(
                server,
                tools,
                reconnect_min=config.reconnect_min_ms / 1000,
                reconnect_max=config.reconnect_max_ms / 1000,
                ping_interval=config.ping_interval_ms / 1000,
                env=os.environ if env is None else env,
                log_dir=None if data_dir is None else data_dir / "mcp",
                **extra,
            )
            for server in config.servers
        )

    def start(self, lifetime: Lifetime) -> None:
        """Start each enabled server's supervisor in the background; returns at once."""
        for server in self.servers:
            if server.config.enabled:
                lifetime.start(f"mcp/{server.name}", server.run)

    def grants(self, chat_id: str) -> frozenset[str]:
        """The permissions an episode in ``chat_id`` holds for MCP tools (the servers it may use)."""
        return frozenset(
            permission(server.name)
            for server in self.servers
            if server.config.enabled and allows(server.config, chat_id, self._superusers)
        )

    def snapshot(self) -> list[dict[str, Any]]:
        """``[{name, state, tools, withheld, last_error}]``, one per configured server."""
        return [server.snapshot().as_dict() for server in self.servers]

    def snapshots(self) -> list[ServerSnapshot]:
        return [server.snapshot() for server in self.servers]

    def status_lines(self) -> list[str]:
        """One line per server for ``/status full`` (none when no server is configured)."""
        lines = []
        for snap in self.snapshots():
            line = f"MCP {snap.name}：{_STATE_ZH[snap.state]}"
            if snap.state is ServerState.UP:
                line += f"，{len(snap.tools)} 个工具"
                if snap.withheld:
                    line += f"（另有 {len(snap.withheld)} 个未开放）"
            elif snap.state is ServerState.DOWN:
                if snap.retry_in is not None:
                    line += f"，{snap.retry_in:.0f} 秒后重连"
                if snap.last_error:
                    line += f"：{snap.last_error[:120]}"
            lines.append(line)
        return lines
