"""Which chats may use a server's tools: deny by default, allow by ``[[mcp.servers]] allow``.

A server's tools carry the permission :func:`permission` names; an episode holds it only in the
chats its server allows (:func:`allows`), so everywhere else the tools are neither offered to the
model nor callable (the registry checks the permission again on every call). ``allow`` lists group
numbers (that group, through any account), ``"private"`` (every private chat) and ``"superusers"``
(the private chats of the bot's superusers).
"""

from __future__ import annotations

from collections.abc import Collection

from runtime.config.mcp import McpServerConfig
from runtime.kernel.message import ChatKey, ChatKind


def permission(server: str) -> str:
    """The permission a server's tools need."""
    return f"mcp:{server}"


def allows(server: McpServerConfig, chat_id: str, superusers: Collection[str]) -> bool:
    """Whether ``chat_id`` may use ``server``'s tools."""
    try:
        key = ChatKey.parse(chat_id)
    except ValueError:
        return False
    allow = server.allow
    if key.kind is ChatKind.GROUP:
        return key.ident in allow
    if "private" in allow:
        return True
    return "superusers" in allow and key.ident in superusers
