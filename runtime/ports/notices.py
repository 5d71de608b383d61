"""The notices an edge reports to the runtime, as values (what a platform event means, not its shape).

* :class:`Recalled` — a message was recalled: it must not be quoted back or answered.
* :class:`BotMuted` / :class:`BotUnmuted` — the platform banned the bot in a chat, or lifted the ban
  (the edge closes and opens that chat's send gate itself).
* :class:`BotRemoved` — the bot left or was removed from a group.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BotMuted", "BotRemoved", "BotUnmuted", "Notice", "Recalled"]


@dataclass(frozen=True, slots=True)
class Recalled:
    chat_id: str
    message_id: str
    operator_id: str
    time: float


@dataclass(frozen=True, slots=True)
class BotMuted:
    """The bot cannot speak in ``chat_id`` until ``until`` (None: until lifted)."""

    chat_id: str
    until: float | None
    operator_id: str
    whole_group: bool
    time: float


@dataclass(frozen=True, slots=True)
class BotUnmuted:
    chat_id: str
    operator_id: str
    time: float


@dataclass(frozen=True, slots=True)
class BotRemoved:
    chat_id: str
    operator_id: str
    time: float


Notice = Recalled | BotMuted | BotUnmuted | BotRemoved
