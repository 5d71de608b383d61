"""How the runtime speaks: the :class:`Outbound` an edge provides, and the values a send gives back.

The edge decides how text reaches a chat (rate limits, splitting, retries, which account) and where
the bot must not speak (its send gates); the runtime asks the gate before it spends a model call,
sends, and hears every part sent through ``on_sent`` (so its own words join the conversation). Quiet
periods are the one gate the runtime opens and closes itself (``/mute``, mute words, a restart).

A send never raises on a failed delivery: it is a :class:`SendResult` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from runtime.quiet import QUIET_IMPOSED, QUIET_LABELS

__all__ = ["GateVerdict", "Outbound", "QuietGates", "SendResult", "SentRecord"]


@dataclass(frozen=True, slots=True)
class GateVerdict:
    open: bool
    # "open" | "muted" (the platform banned the bot) | "quiet" (a quiet period, of ``kind``) |
    # "restricted" (the chat's account is paused)
    reason: str
    until: float | None = None
    kind: str | None = None  # of a quiet period: QUIET_ASKED | QUIET_IMPOSED

    @property
    def label(self) -> str:
        """The reason as ``/status`` shows it: ``quiet（管理员）`` for a superuser's mute."""
        return f"{self.reason}（{QUIET_LABELS[self.kind]}）" if self.kind in QUIET_LABELS else self.reason


@dataclass(frozen=True, slots=True)
class SentRecord:
    """One message part the bot sent (or, in shadow mode, would have sent)."""

    chat_id: str
    text: str
    message_id: str | None
    time: float  # when the part was handed to the platform, not when the platform confirmed it
    reply_to: str | None
    shadow: bool


@dataclass(frozen=True, slots=True)
class SendResult:
    chat_id: str
    sent: bool
    # "sent" | "shadow" | "muted" | "quiet" | "empty" | "no_connection" | "restricted" (the account's
    # sends are paused) | "failed" | "unanswered" (not answered in time: it may have gone out)
    reason: str
    parts: tuple[str, ...] = ()
    message_ids: tuple[str, ...] = ()
    attempts: int = 0


class QuietGates(Protocol):
    """The quiet periods of an edge's send gates (:mod:`runtime.quiet` holds the rule)."""

    def quiet(
        self, chat_id: str, until: float | None, kind: str = QUIET_IMPOSED, *, now: float | None = None
    ) -> bool: ...

    def unquiet(self, chat_id: str, *, only: str | None = None) -> bool: ...


class Outbound(Protocol):
    """Everything the runtime sends goes through one of these."""

    @property
    def gates(self) -> QuietGates: ...

    def gate(self, chat_id: str) -> GateVerdict:
        """Whether the bot may speak in ``chat_id`` now, and if not why."""
        ...

    async def send(
        self, chat_id: str, text: str, *, reply_to: str | None = None, admin: bool = False
    ) -> SendResult:
        """Send ``text`` (``admin``: an answer to a superuser's command); never raises on a failed send."""
        ...

    def on_sent(self, listener: Callable[[SentRecord], None]) -> Callable[[], None]:
        """Call ``listener`` for every part sent; returns the disposer."""
        ...
