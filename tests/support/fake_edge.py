"""A fake edge for the runtime's tests: the :mod:`runtime.ports` contract kept in lists, no NoneBot.

:class:`FakeOutbound` is an :class:`~runtime.ports.Outbound` that delivers every send at once and
records it (one part per send: splitting, rate limits, retries and accounts are the real edge's, and
``tests/edge`` tests them). Its gates hold quiet periods with the core's rule
(:class:`runtime.quiet.QuietBook`); ``connected`` and ``fail`` stand for a lost connection and failed
sends, ``unanswered`` for sends that go out but are never answered nor echoed; in shadow mode nothing
is delivered and the would-be parts are recorded apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio.lowlevel

from runtime.ports import GateVerdict, SendResult, SentRecord
from runtime.quiet import QUIET_IMPOSED, QuietBook

__all__ = ["FakeGates", "FakeOutbound", "Sent"]


@dataclass(frozen=True, slots=True)
class Sent:
    """One message the runtime sent through the fake edge."""

    chat_id: str
    text: str
    reply_to: str | None
    message_id: str
    time: float


class FakeGates:
    """Quiet periods only: the platform's bans are the real edge's."""

    def __init__(self) -> None:
        self.book = QuietBook()

    def quiet(
        self, chat_id: str, until: float | None, kind: str = QUIET_IMPOSED, *, now: float | None = None
    ) -> bool:
        return self.book.open(chat_id, until, kind, now=now)

    def unquiet(self, chat_id: str, *, only: str | None = None) -> bool:
        return self.book.lift(chat_id, only=only)

    def verdict(self, chat_id: str, now: float) -> GateVerdict:
        period = self.book.current(chat_id, now)
        if period is None:
            return GateVerdict(True, "open")
        return GateVerdict(False, "quiet", period.until, period.kind)


class FakeOutbound:
    """See the module docstring."""

    def __init__(
        self,
        clock: Callable[[], float] = lambda: 0.0,
        *,
        shadow_mode: bool = False,
        connected: bool = True,
        fail: int = 0,
    ) -> None:
        self.clock = clock
        self.shadow_mode = shadow_mode
        self.connected = connected
        self.fail = fail  # the next ``fail`` sends fail
        # The next ``unanswered`` sends go out, and the platform neither answers them nor reports them
        # back (a part whose echo came back the edge reports as sent).
        self.unanswered = 0
        self.unconfirmed: list[Sent] = []  # those sends
        self.gates = FakeGates()
        self.sent: list[Sent] = []
        self.shadow: list[SentRecord] = []
        self.times: list[float] = []  # of every send delivered (a live list, as ``sent``)
        self._listeners: list[Callable[[SentRecord], None]] = []
        self._next_id = 900_000

    # -- the port ---------------------------------------------------------------------------------

    def gate(self, chat_id: str) -> GateVerdict:
        return self.gates.verdict(chat_id, self.clock())

    async def send(
        self, chat_id: str, text: str, *, reply_to: str | None = None, admin: bool = False
    ) -> SendResult:
        verdict = self.gate(chat_id)
        if not verdict.open and not (admin and verdict.reason == "quiet"):
            return SendResult(chat_id, False, verdict.reason)
        text = text.strip()
        if not text:
            return SendResult(chat_id, False, "empty")
        if self.shadow_mode:
            self._record(SentRecord(chat_id, text, None, self.clock(), reply_to, shadow=True))
            return SendResult(chat_id, False, "shadow", (text,))
        if not self.connected:
            return SendResult(chat_id, False, "no_connection")
        await anyio.lowlevel.checkpoint()  # a real send goes out over the network: others run meanwhile
        if self.unanswered:
            self.unanswered -= 1
            self._next_id += 1
            self.unconfirmed.append(Sent(chat_id, text, reply_to, str(self._next_id), self.clock()))
            return SendResult(chat_id, False, "unanswered", attempts=1)
        if self.fail:
            self.fail -= 1
            return SendResult(chat_id, False, "failed", attempts=1)
        self._next_id += 1
        message_id = str(self._next_id)
        self.sent.append(Sent(chat_id, text, reply_to, message_id, self.clock()))
        self.times.append(self.clock())
        self._record(SentRecord(chat_id, text, message_id, self.clock(), reply_to, shadow=False))
        return SendResult(chat_id, True, "sent", (text,), (message_id,), 1)

    def on_sent(self, listener: Callable[[SentRecord], None]) -> Callable[[], None]:
        self._listeners.append(listener)

        def dispose() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return dispose

    def confirm(self, record: SentRecord) -> None:
        """Tell the listeners of a send the platform confirmed, as :meth:`send` does (a test may
        confirm one late, after the platform's echo of it)."""
        self._record(record)

    # -- what a test reads ------------------------------------------------------------------------

    def texts(self, chat: str | None = None) -> list[str]:
        return [sent.text for sent in self.sent if chat is None or sent.chat_id == chat]

    def _record(self, record: SentRecord) -> None:
        if record.shadow:
            self.shadow.append(record)
        for listener in tuple(self._listeners):
            listener(record)
