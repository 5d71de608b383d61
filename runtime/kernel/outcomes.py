"""What the kernel hands back: the decision on a message and the activations that come due.

Values only (frozen dataclasses and enums); :mod:`runtime.kernel.kernel` makes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from runtime.kernel.attention import Attention, Decision
from runtime.kernel.budget import BudgetsStatistics
from runtime.kernel.events import BotEvent, EventStoreStatistics
from runtime.kernel.lexicon.terms import KeywordHit, LexiconStatistics
from runtime.kernel.message import ChatMessage
from runtime.kernel.scheduler import SchedulerStatistics
from runtime.kernel.threads import ThreadAssignment, ThreadTrackerStatistics

__all__ = ["Activation", "ActivationOutcome", "IngestAction", "IngestResult", "KernelStatistics"]


class IngestAction(StrEnum):
    ACT_NOW = "act_now"
    SCHEDULED = "scheduled"
    RECORDED = "recorded"


class ActivationOutcome(StrEnum):
    READY = "ready"
    BUDGET_BLOCKED = "budget_blocked"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What the kernel made of one message."""

    message: ChatMessage
    event: BotEvent
    thread: ThreadAssignment
    attention: Attention
    action: IngestAction
    activate_at: float | None  # now for act_now, the activation time when scheduled, else None
    superseded: tuple[str, ...]
    keyword_hits: tuple[KeywordHit, ...]
    reason: str
    # The ready activation the kernel made for an act_now message (its trigger is the message).
    activation: Activation | None = None

    @property
    def decision(self) -> Decision:
        return self.attention.decision


@dataclass(frozen=True, slots=True)
class Activation:
    """An activation leaving the scheduler: ready to deliberate, or why not.

    ``trigger`` is the message a ``message`` activation answers, as the kernel ingested it; ``None``
    for other kinds and for events restored from storage (the kernel keeps no text across restarts).
    """

    event: BotEvent
    outcome: ActivationOutcome
    reason: str = ""
    trigger: ChatMessage | None = None

    @property
    def ready(self) -> bool:
        return self.outcome is ActivationOutcome.READY


@dataclass(frozen=True, slots=True)
class KernelStatistics:
    ingested: int
    by_action: tuple[tuple[str, int], ...]
    by_decision: tuple[tuple[str, int], ...]
    activations: tuple[tuple[str, int], ...]
    rescheduled_by_budget: int
    superseded: int
    learn_queue: int
    learn_dropped: int
    learned_texts: int
    events: EventStoreStatistics
    threads: ThreadTrackerStatistics
    scheduler: SchedulerStatistics
    budgets: BudgetsStatistics
    lexicon: LexiconStatistics
