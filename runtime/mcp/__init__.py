"""Tools from MCP servers (the official ``mcp`` SDK), behind the ToolRegistry, safe by default.

::

    McpHub(config.mcp, tools, superusers=...)      every [[mcp.servers]]; start(lifetime) returns at once
    ├── McpServer                                  one server, supervised: connect, register, ping,
    │                                              withdraw, back off, reconnect (runtime.mcp.server)
    ├── grants(chat_id) -> permissions             which servers' tools an episode there may see and call
    └── snapshot() -> [{name, state, tools, withheld, last_error}]      for /status and the console

What it promises: a server's tools are offered only in the chats its ``allow`` names (each tool
needs the server's permission, :func:`~runtime.mcp.access.permission`); a tool with side effects
(declared by the server, or listed in ``side_effect``) only when ``grant`` lists it; every call is
cut off after ``timeout_s`` by the registry; results are untrusted text, capped and framed as data
(:mod:`runtime.mcp.results`); names are ``<server>__<tool>`` (:mod:`runtime.mcp.names`). A server
that cannot start, breaks or hangs holds up nothing: its tools are gone while it is down and come
back when a new session is initialised.
"""

from __future__ import annotations

from runtime.mcp.hub import McpHub
from runtime.mcp.names import tool_name
from runtime.mcp.server import McpServer, ServerSnapshot, ServerState

__all__ = ["McpHub", "McpServer", "ServerSnapshot", "ServerState", "tool_name"]
