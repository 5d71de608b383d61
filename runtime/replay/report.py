"""ReplayReport: the per-chat table printed on stderr at the end of a replay.

Columns: messages from people (``msgs``) and from the bot itself (``bot``); the kernel's decisions on
people's messages (``forced`` / ``high`` / ``medium`` / ``low``); what became of activations
(``speak`` = would speak, ``blocked`` = budget-blocked, including forced messages the budget dropped on
arrival, ``expired``, ``supers.`` = superseded by a newer message, ``quiet`` = in a quiet period the
bot kept, shown when there are any); and the cost of speaking:
``calls`` = estimated model calls (one per would-speak: an episode's first call; the ReAct loop may add
more) and ``tokens`` = estimated prompt tokens of the assembled packets (TokenEstimator).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

from runtime.kernel.attention import Decision
from runtime.replay.engine import ActivationLine, MessageLine, Outcome

__all__ = ["ChatTally", "ReplayReport", "ReportStatistics"]


@dataclass(frozen=True, slots=True)
class ReportStatistics:
    chats: int
    messages: int
    would_speak: int
    prompt_tokens: int


@dataclass(slots=True)
class ChatTally:
    """One chat's counts (mutable while the replay runs; :meth:`ReplayReport.rows` hands out copies)."""

    messages: int = 0
    own: int = 0
    forced: int = 0
    high: int = 0
    medium: int = 0
    low: int = 0
    would_speak: int = 0
    budget_blocked: int = 0
    expired: int = 0
    superseded: int = 0
    quiet: int = 0  # in a quiet period the bot kept (its column shows only when there are any)
    model_calls: int = 0
    prompt_tokens: int = 0

    def add(self, other: ChatTally) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


_COLUMNS = (
    ("msgs", "messages"),
    ("bot", "own"),
    ("forced", "forced"),
    ("high", "high"),
    ("medium", "medium"),
    ("low", "low"),
    ("speak", "would_speak"),
    ("blocked", "budget_blocked"),
    ("expired", "expired"),
    ("supers.", "superseded"),
    ("quiet", "quiet"),
    ("calls", "model_calls"),
    ("tokens", "prompt_tokens"),
)
_OUTCOME_FIELD = {
    Outcome.WOULD_SPEAK: "would_speak",
    Outcome.BUDGET_BLOCKED: "budget_blocked",
    Outcome.EXPIRED: "expired",
    Outcome.SUPERSEDED: "superseded",
    Outcome.QUIET: "quiet",
}


class ReplayReport:
    """An observer of the replay (see :mod:`runtime.replay.run`) that counts per chat."""

    def __init__(self) -> None:
        self._chats: dict[str, ChatTally] = {}

    def _tally(self, chat_id: str) -> ChatTally:
        tally = self._chats.get(chat_id)
        if tally is None:
            tally = self._chats[chat_id] = ChatTally()
        return tally

    def message(self, line: MessageLine) -> None:
        tally = self._tally(line.chat_id)
        if line.source.message.from_self:
            tally.own += 1
            return
        tally.messages += 1
        decision = line.result.decision
        name = decision.value if isinstance(decision, Decision) else str(decision)
        setattr(tally, name, getattr(tally, name) + 1)

    def activation(self, line: ActivationLine, prompt_tokens: int | None) -> None:
        tally = self._tally(line.chat_id)
        name = _OUTCOME_FIELD[line.outcome]
        setattr(tally, name, getattr(tally, name) + 1)
        if line.outcome is Outcome.WOULD_SPEAK:
            tally.model_calls += 1
            tally.prompt_tokens += prompt_tokens or 0

    def rows(self) -> list[tuple[str, ChatTally]]:
        """``(chat_id, counts)`` per chat, sorted by chat id, copies."""
        out: list[tuple[str, ChatTally]] = []
        for chat_id in sorted(self._chats):
            copy = ChatTally()
            copy.add(self._chats[chat_id])
            out.append((chat_id, copy))
        return out

    def total(self) -> ChatTally:
        total = ChatTally()
        for tally in self._chats.values():
            total.add(tally)
        return total

    def statistics(self) -> ReportStatistics:
        total = self.total()
        return ReportStatistics(
            len(self._chats), total.messages + total.own, total.would_speak, total.prompt_tokens
        )

    def render(self) -> str:
        """The table: one row per chat and a total row."""
        rows = [(chat_id, tally) for chat_id, tally in self.rows()]
        rows.append(("total", self.total()))
        return render_table(rows)


def render_table(rows: Iterable[tuple[str, ChatTally]]) -> str:
    rows = list(rows)
    quiet = any(tally.quiet for _, tally in rows)
    columns = [(title, name) for title, name in _COLUMNS if name != "quiet" or quiet]
    header = ["chat", *(title for title, _ in columns)]
    body = [[chat_id, *(str(getattr(tally, name)) for _, name in columns)] for chat_id, tally in rows]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        first = row[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True))
        return "  ".join([first, *rest])

    lines = [fmt(header), "  ".join("-" * w for w in widths)]
    lines.extend(fmt(row) for row in body)
    return "\n".join(lines)
