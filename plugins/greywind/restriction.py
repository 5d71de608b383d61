"""A per-account pause when sends fail the way a restricted (风控) QQ account's sends fail.

QQ restricts an account that keeps sending while it is under suspicion, and an account that goes on
trying (every reply retried, every reminder re-sent) is the one that gets frozen. A restricted account's
sends fail with OneBot ``retcode`` 1200 or are not answered at all (a timeout). So each account has
a circuit:

* closed: sends go through; each restriction-like failure counts, a success resets the count (other
  failures, such as a bad parameter, neither count nor reset);
* after ``after_failures`` restriction-like failures in a row it opens: the account sends nothing
  for ``pause`` seconds. Sends asked for meanwhile are refused at once (``reason="restricted"``,
  counted and logged) without reaching the OneBot side;
* when the pause ends, one send goes through as a probe (the others are still refused until it is
  answered): success closes the circuit, another restriction-like failure opens it again for twice as
  long, up to ``max_pause``.

While an account is paused its chats' send gates read ``restricted`` (``Outbound.gate``), so the
runtime spends no model call on words that cannot be sent, and a reminder waits for the pause's end.
Every other account keeps its own circuit and keeps sending.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

import structlog

__all__ = [
    "RESTRICTION_RETCODES",
    "AccountCircuitStatistics",
    "Outcome",
    "RestrictionCircuits",
    "Ticket",
    "is_restriction_like",
    "is_timeout",
]

log = structlog.get_logger("greywind.outbound")

RESTRICTION_RETCODES = frozenset({1200})
# While the probe is out, a paused account's chats are closed for about this long at a time.
PROBE_WAIT = 1.0


def is_timeout(exc: BaseException) -> bool:
    """The call was not answered in time (ours, or the adapter's ``NetworkError("... timeout")``):
    whether it was carried out is unknown."""
    if isinstance(exc, TimeoutError):
        return True
    message = getattr(exc, "msg", None)
    return isinstance(message, str) and "timeout" in message.lower()


def is_restriction_like(exc: BaseException) -> bool:
    """A timeout, or a OneBot ``ActionFailed`` with a restriction's retcode."""
    info = getattr(exc, "info", None)
    if isinstance(info, Mapping) and info.get("retcode") in RESTRICTION_RETCODES:
        return True
    return is_timeout(exc)


class Outcome(Enum):
    SENT = "sent"
    RESTRICTED = "restricted"  # a restriction-like failure
    OTHER = "other"  # another failure, or the send was cancelled


class Ticket(Enum):
    NORMAL = "normal"
    PROBE = "probe"


@dataclass(frozen=True, slots=True)
class AccountCircuitStatistics:
    account: str
    state: str  # "closed" | "paused" | "probing"
    failures: int  # restriction-like failures in a row
    pauses: int  # pauses in a row (the next one lasts pause * 2 ** pauses)
    paused_until: float | None
    pause_seconds: float  # of the current (or last) pause
    refused: int  # sends refused during pauses, since start
    total_pauses: int  # since start


class _Circuit:
    __slots__ = ("failures", "pause_seconds", "pauses", "probing", "refused", "total_pauses", "until")

    def __init__(self) -> None:
        self.failures = self.pauses = self.refused = self.total_pauses = 0
        self.until: float | None = None
        self.probing = False
        self.pause_seconds = 0.0


class RestrictionCircuits:
    """One circuit per account id; see the module docstring."""

    def __init__(
        self,
        *,
        after_failures: int = 3,
        pause: float = 60.0,
        max_pause: float = 1_800.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if after_failures < 1 or pause <= 0:
            raise ValueError("a circuit needs at least one failure and a positive pause")
        self._after = after_failures
        self._pause = pause
        self._max_pause = max(max_pause, pause)
        self._clock = clock
        self._circuits: dict[str, _Circuit] = {}

    def paused(self, account: str) -> bool:
        """The account may not send now (paused, or its pause is over and a probe is out)."""
        circuit = self._circuits.get(account)
        if circuit is None or circuit.until is None:
            return False
        return self._clock() < circuit.until or circuit.probing

    def paused_until(self, account: str) -> float | None:
        """When the account may send again (None: now). While a probe is out: a moment from now."""
        circuit = self._circuits.get(account)
        if circuit is None or circuit.until is None:
            return None
        now = self._clock()
        if now < circuit.until:
            return circuit.until
        return now + PROBE_WAIT if circuit.probing else None

    def admit(self, account: str) -> Ticket | None:
        """Let one send through (None: refused, and counted). A ticket must be reported."""
        circuit = self._circuits.setdefault(account, _Circuit())
        if circuit.until is None:
            return Ticket.NORMAL
        if self._clock() < circuit.until or circuit.probing:
            circuit.refused += 1
            return None
        circuit.probing = True
        log.info("account_probe", account=account, pauses=circuit.pauses)
        return Ticket.PROBE

    def report(self, account: str, ticket: Ticket, outcome: Outcome) -> None:
        circuit = self._circuits.setdefault(account, _Circuit())
        if ticket is Ticket.PROBE:
            circuit.probing = False
        if outcome is Outcome.SENT:
            if circuit.until is not None and ticket is Ticket.PROBE:
                log.info("account_resumed", account=account, pauses=circuit.pauses)
                circuit.until = None
                circuit.pauses = 0
            if circuit.until is None:
                circuit.failures = 0
            return
        if outcome is Outcome.OTHER:
            return
        if circuit.until is not None and ticket is not Ticket.PROBE:
            return  # a send that was already on its way when the pause began
        circuit.failures += 1
        if ticket is Ticket.PROBE or circuit.failures >= self._after:
            self._open(account, circuit)

    def _open(self, account: str, circuit: _Circuit) -> None:
        seconds = min(self._pause * 2**circuit.pauses, self._max_pause)
        now = self._clock()
        circuit.until = now + seconds
        circuit.pause_seconds = seconds
        circuit.pauses += 1
        circuit.total_pauses += 1
        log.warning(
            "account_paused",
            account=account,
            failures=circuit.failures,
            pause_s=seconds,
            pauses=circuit.pauses,
            until=circuit.until,
            detail="failing like a restricted account's (retcode 1200, timeouts); none until the pause ends",
        )

    def statistics(self) -> tuple[AccountCircuitStatistics, ...]:
        now = self._clock()
        out = []
        for account, c in sorted(self._circuits.items()):
            state = "closed" if c.until is None else ("probing" if c.probing or now >= c.until else "paused")
            out.append(
                AccountCircuitStatistics(
                    account, state, c.failures, c.pauses, c.until, c.pause_seconds, c.refused, c.total_pauses
                )
            )
        return tuple(out)
