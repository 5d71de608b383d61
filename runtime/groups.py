"""Which groups the bot lives in: ``[groups]`` of the config, overridden per chat by ``/enable`` and
``/disable``.

In a group it does not live in, the bot neither speaks nor spends the model: no episodes, no
proactive speech, no reminders sent there. Its messages are still stored, so the bot has the context
when the group is enabled later, and superusers' commands are still answered there (a superuser can
``/enable`` a group from inside it). Private chats are always on.

The config names a group by its number, the same group for every account; an override names a chat
key (``qq:<account>:group:<id>``), one account's chat. :class:`GroupPolicy` is the one rule, asked by
every gate that decides whether the bot may speak or think in a chat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from runtime.kernel.message import ChatKey, ChatKind

__all__ = ["GROUPS_FILE", "GroupPolicy"]

#: The saved overrides in the data directory: a JSON object, chat id -> true (enabled) | false.
GROUPS_FILE = "groups.json"


class GroupPolicy:
    """``allow`` (empty: every group) and ``deny`` are group numbers; ``overrides`` chat id -> on."""

    __slots__ = ("_allow", "_deny", "_overrides")

    def __init__(
        self, allow: Iterable[str] = (), deny: Iterable[str] = (), overrides: Mapping[str, bool] | None = None
    ) -> None:
        self._allow = frozenset(allow)
        self._deny = frozenset(deny)
        self._overrides: dict[str, bool] = dict(overrides or {})

    def enabled(self, chat_id: str) -> bool:
        """Whether the bot lives in ``chat_id`` (anything not a group: yes)."""
        override = self._overrides.get(chat_id)
        if override is not None:
            return override
        return self.configured(chat_id)

    def configured(self, chat_id: str) -> bool:
        """What the config alone says of ``chat_id``."""
        try:
            key = ChatKey.parse(chat_id)
        except ValueError:
            return True
        if key.kind is not ChatKind.GROUP:
            return True
        if key.ident in self._deny:
            return False
        return not self._allow or key.ident in self._allow

    def set(self, chat_id: str, on: bool) -> bool:
        """Override the config for ``chat_id`` (kept even when the config agrees, so a later change of
        the config does not undo a command); whether the bot's presence there changed."""
        before = self.enabled(chat_id)
        self._overrides[chat_id] = on
        return before != on

    def overrides(self) -> dict[str, bool]:
        return dict(self._overrides)

    def describe(self) -> str:
        """The policy in one line, as ``/status`` shows it."""
        where = ("只在 " + "、".join(sorted(self._allow)) + " 群") if self._allow else "所有群"
        if self._deny:
            where += "（除了 " + "、".join(sorted(self._deny)) + "）"
        on = sorted(c for c, v in self._overrides.items() if v)
        off = sorted(c for c, v in self._overrides.items() if not v)
        parts = [f"群：{where}"]
        if on:
            parts.append("已启用 " + "，".join(on))
        if off:
            parts.append("已停用 " + "，".join(off))
        return "；".join(parts)
