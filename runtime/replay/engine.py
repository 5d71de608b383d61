"""ReplayEngine: the bot's kernel driven by a log's timestamps on a :class:`ManualClock`.

Before each message the clock walks forward through every moment something was due (an activation's
``not_before``, the lexicon's learning and decay ticks), so activations fire at their true times, not
at the next message's. After the last message :meth:`ReplayEngine.finish` drains what is still pending.

An activation the bot would deliberate on (``ready``, or a forced message acted on at once) goes
through the kernel's deliberation as a real reply does (:mod:`runtime.kernel.deliberation`): begun,
the budget asked again, speech recorded (forced or not, as the event says) with a reply to the
triggering message noted into its thread, finished ``replied`` — a ``would_speak``. So the budget and
the thread continuity of later messages are what they would have been. A forced message the
budget drops at once (no activation ever scheduled) is reported as a ``budget_blocked`` activation at
the message's time, so every refusal shows in the output.

The model is taken to answer at once: the reply is charged at the activation's time and no
deliberation holds the chat back while it runs, so a chat whose real episodes take seconds may see a
few more activations here than the bot would act on.

Everything here is synchronous and deterministic: the kernel's ids come from a counter, time only from
the log.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from runtime.kernel.attention import Decision
from runtime.kernel.clock import ManualClock
from runtime.kernel.deliberation import Recheck
from runtime.kernel.events import BotEvent, EventState
from runtime.kernel.kernel import Activation, IngestAction, IngestResult, Kernel, KernelStatistics
from runtime.kernel.message import ChatKey, ChatMessage
from runtime.kernel.settings import KernelSettings
from runtime.quiet_history import QuietTimeline
from runtime.replay import ReplayStuck
from runtime.replay.reader import SourceMessage

__all__ = [
    "ActivationLine",
    "Maintenance",
    "MessageLine",
    "Outcome",
    "ReplayEngine",
    "ReplayEngineStatistics",
    "group_ref",
    "platform_id",
]


class Outcome(StrEnum):
    WOULD_SPEAK = "would_speak"
    BUDGET_BLOCKED = "budget_blocked"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    QUIET = "quiet"  # the chat was in a quiet period the bot kept (``--from-db`` with its history)


def platform_id(ident: str) -> int | str:
    """``"123"`` -> ``123`` (QQ ids are numbers; the log wrote them so), anything else unchanged."""
    try:
        number = int(ident)
    except ValueError:
        return ident
    return number if str(number) == ident else ident


def group_ref(chat_id: str) -> int | str | None:
    """The ``group_id`` of an output line: the group's id, or None for a private chat."""
    key = ChatKey.parse(chat_id)
    return None if key.is_private else platform_id(key.ident)


@dataclass(frozen=True, slots=True)
class MessageLine:
    """What the kernel made of one input message (one output line)."""

    source: SourceMessage
    result: IngestResult

    @property
    def chat_id(self) -> str:
        return self.source.message.chat_id

    def to_json(self) -> dict[str, object]:
        result = self.result
        return {
            "message_id": self.source.ref,
            "event_id": result.event.id,
            "thread_id": result.thread.thread.id,
            "attention": round(result.attention.score, 4),
            "decision": result.decision.value,
            "reasons": list(result.attention.reasons),
            "action": result.action.value,
        }


@dataclass(frozen=True, slots=True)
class ActivationLine:
    """An activation's fate (one output line); ``reason`` is the kernel's, for the report."""

    time: float
    event: BotEvent
    outcome: Outcome
    forced: bool
    reason: str = ""

    @property
    def chat_id(self) -> str:
        return self.event.chat_id

    def to_json(self) -> dict[str, object]:
        return {
            "ts": self.time,
            "type": "activation",
            "group_id": group_ref(self.event.chat_id),
            "event_id": self.event.id,
            "outcome": self.outcome.value,
        }


@dataclass(frozen=True, slots=True)
class Maintenance:
    """How often the bot's background work runs, in seconds (``[lexicon]``'s intervals)."""

    learn_interval: float = 60.0
    decay_interval: float = 3_600.0


@dataclass(frozen=True, slots=True)
class ReplayEngineStatistics:
    messages: int
    activations: tuple[tuple[str, int], ...]
    learn_ticks: int
    decay_ticks: int
    now: float
    kernel: KernelStatistics


# The most due() batches at one instant before the replay gives up (each batch either hands out an
# activation or reschedules one later; a kernel that does neither forever would hang the run).
_MAX_BATCHES_AT_ONE_INSTANT = 10_000


class ReplayEngine:
    """The kernel over a log; feed it messages in time order (see the module docstring)."""

    def __init__(
        self,
        settings: KernelSettings,
        *,
        start: float,
        maintenance: Maintenance | None = None,
        quiet: QuietTimeline | None = None,
    ) -> None:
        self._quiet = quiet
        self.clock = ManualClock(start)
        self.kernel = Kernel(settings, now=start)
        self._maintenance = m = maintenance or Maintenance()
        self._self_id = settings.self_ids[0] if settings.self_ids else "self"
        self._self_name = settings.persona_name
        self._next_learn = start + m.learn_interval
        self._next_decay = start + m.decay_interval
        self._messages = 0
        self._outcomes: Counter[str] = Counter()
        self._learn_ticks = 0
        self._decay_ticks = 0
        self._stuck_at: float | None = None
        self._batches_here = 0

    def now(self) -> float:
        return self.clock.now()

    def advance(self, until: float) -> list[ActivationLine]:
        """Move the clock to ``until``, firing every activation and tick due on the way, each at its time."""
        out: list[ActivationLine] = []
        scheduler = self.kernel.scheduler
        while True:
            wake = scheduler.next_at()
            tick = min(self._next_learn, self._next_decay)
            at = tick if wake is None else min(wake, tick)
            if at > until:
                break
            at = max(at, self.clock.now())
            self.clock.set(at)
            if tick <= at:
                self._maintain(at)
            if wake is not None and wake <= at:
                out.extend(self._drain(at))
        if until > self.clock.now():
            self.clock.set(until)
        return out

    def ingest(self, source: SourceMessage) -> tuple[MessageLine, list[ActivationLine]]:
        """One message at its own time; its activation if acted on at once, and what is due then."""
        message = source.message
        if message.time < self.clock.now():
            raise ValueError(f"message {message.message_id} at {message.time} is before {self.clock.now()}")
        out = self.advance(message.time)
        now = message.time
        result = self.kernel.ingest(message)
        self._messages += 1
        if result.activation is not None:
            out.extend(self._speak(result.activation, now))
        elif result.decision is Decision.FORCED and result.action is IngestAction.RECORDED:
            out.append(self._line(now, result.event, Outcome.BUDGET_BLOCKED, result.reason))
        out.extend(self._drain(now))
        return MessageLine(source, result), out

    def finish(self) -> list[ActivationLine]:
        """Fire everything still pending, each at its time (rescheduled ones until their deadline)."""
        out: list[ActivationLine] = []
        scheduler = self.kernel.scheduler
        while (wake := scheduler.next_at()) is not None:
            out.extend(self.advance(max(wake, self.clock.now())))
        return out

    def statistics(self) -> ReplayEngineStatistics:
        return ReplayEngineStatistics(
            messages=self._messages,
            activations=tuple(sorted(self._outcomes.items())),
            learn_ticks=self._learn_ticks,
            decay_ticks=self._decay_ticks,
            now=self.clock.now(),
            kernel=self.kernel.statistics(),
        )

    # -- inside ----------------------------------------------------------------------------------

    def _drain(self, now: float) -> list[ActivationLine]:
        if now == self._stuck_at:
            self._batches_here += 1
            if self._batches_here > _MAX_BATCHES_AT_ONE_INSTANT:
                raise ReplayStuck(f"the kernel kept activating at {now} without moving on")
        else:
            self._stuck_at, self._batches_here = now, 0
        out: list[ActivationLine] = []
        for activation in self.kernel.due(now):
            if activation.ready:
                out.extend(self._speak(activation, now))
            else:
                out.append(
                    self._line(now, activation.event, Outcome(activation.outcome.value), activation.reason)
                )
        return out

    def _line(self, now: float, event: BotEvent, outcome: Outcome, reason: str) -> ActivationLine:
        self._outcomes[outcome.value] += 1
        return ActivationLine(now, event, outcome, event.payload.get("forced") is True, reason)

    def _speak(self, activation: Activation, now: float) -> list[ActivationLine]:
        """Charge the activation as the bot's reply would be charged (see the module docstring).

        The budget asked again refuses only what the bot's driver would refuse: snoozed, it comes
        back later (no line, as a reschedule); skipped, it is a ``budget_blocked`` line.
        """
        deliberation = self.kernel.deliberate(activation, now)
        if self._quiet is not None and self._quiet.quiet_at(activation.event.chat_id, now):
            done = deliberation.finish(now, EventState.SKIPPED, reason="quiet period")
            return [self._line(now, done, Outcome.QUIET, "quiet period")]
        check = deliberation.recheck(now)
        if check.verdict is Recheck.SNOOZE:
            return []
        if check.verdict is Recheck.SKIP:
            return [self._line(now, deliberation.event, Outcome.BUDGET_BLOCKED, check.reason)]
        event = deliberation.event
        key = ChatKey.parse(event.chat_id)
        trigger = event.evidence_message_ids[0] if event.evidence_message_ids else None
        reply = ChatMessage(
            message_id=f"replay-{event.id}",
            chat_kind=key.kind,
            chat_ident=key.ident,
            platform=key.platform,
            account=key.account,
            sender_id=self._self_id,
            sender_name=self._self_name,
            time=now,
            text="",
            reply_to=trigger,
            from_self=True,
        )
        deliberation.spoke(now, sent=(reply,))
        done = deliberation.finish(now, EventState.REPLIED)
        return [self._line(now, done, Outcome.WOULD_SPEAK, "would speak")]

    def _maintain(self, now: float) -> None:
        """The bot's background work: lexicon learning, and hourly decay and pruning."""
        m = self._maintenance
        if self._next_learn <= now:
            self.kernel.learn_pending(now)
            self._learn_ticks += 1
            self._next_learn = now + m.learn_interval
        if self._next_decay <= now:
            lexicon = self.kernel.lexicon
            lexicon.decay(now)
            lexicon.expire(now)
            self.kernel.prune(now)
            self._decay_ticks += 1
            self._next_decay = now + m.decay_interval
