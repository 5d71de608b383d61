"""What an MCP tool is called where the model sees it: ``<server>__<tool>``.

A function name the model may call is ``[A-Za-z0-9_-]{1,64}``; a server's tool names are whatever
its author chose. Characters outside that set become ``_`` and the name is cut to 64. The server
prefix keeps MCP tools apart from the built-in ones (no built-in tool has ``__`` after a server's
name); a name that is taken all the same — by a built-in tool, or by another tool of the same server
once cut or replaced — is not offered at all, and the server's state says which and why: a tool the
model cannot tell from another must not be called in its place.
"""

from __future__ import annotations

import re

MAX_NAME = 64
SEPARATOR = "__"
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """The name the model sees for ``tool`` of ``server``."""
    return _OUTSIDE.sub("_", f"{server}{SEPARATOR}{tool}")[:MAX_NAME]
