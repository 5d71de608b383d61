"""One deliberation on a ready activation, begin to finish: the sequence every caller of the kernel follows.

The bot's episode driver and the replay both act on what :meth:`Kernel.due` (or an ``act_now``
ingest) hands them in the same order, so the budget and the threads of later messages see the same
facts whoever drove the kernel::

    d = kernel.deliberate(activation, now)    # eligible -> deliberating (a KernelError: withdrawn)
    check = d.recheck(now)                    # the chat's budget asked again, now the chat is held
    if not check.proceed:                     # d is finished already: snoozed until check.until,
        return                                # or skipped with check.reason
    ...                                       # the model, the send
    d.spoke(now, sent=(reply,))               # speech recorded (forced as the activation is),
                                              # each message sent joins its conversation thread
    d.finish(now, "replied")                  # exactly once: replied | skipped | expired | snoozed

Why the budget is asked again: the kernel asks when a message arrives or an activation falls due,
but speech is only spent when a reply is sent. A burst of @-mentions all pass at arrival while the
first is still being answered; asked again once the episode holds the chat, the second one sees the
first reply's speech and is snoozed to the budget's ``retry_at``, or skipped when that is past its
deadline (reason ``budget: <why>``).

The order is enforced: :meth:`Deliberation.recheck` first and once; :meth:`Deliberation.spoke` once,
after a recheck that proceeded and before the finish; ``finish(replied)`` only after speech; any
finish exactly once. Anything else raises :class:`~runtime.kernel.errors.IllegalTransition` (``what``
is ``"deliberation"``). Messages the bot sends that a caller observes as they leave (the bot's
outbound hook, which also sees answers to commands) join their threads through
:meth:`Kernel.note_outgoing`; :meth:`Deliberation.spoke` takes the ones the caller holds itself.

``trigger`` is the message the activation answers, as the kernel ingested it (``None`` for
activations that are not messages, and for messages restored from storage after a restart: the
kernel keeps no text across restarts).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from runtime.kernel.errors import IllegalTransition
from runtime.kernel.events import BotEvent, EventState
from runtime.kernel.message import ChatMessage
from runtime.kernel.outcomes import Activation

if TYPE_CHECKING:
    from runtime.kernel.kernel import Kernel

__all__ = ["BudgetRecheck", "Deliberation", "Recheck", "Stage"]

_WHAT = "deliberation"


class Recheck(StrEnum):
    """What the budget said when asked again: go on, come back at ``until``, or drop it."""

    PROCEED = "proceed"
    SNOOZE = "snooze"
    SKIP = "skip"


class Stage(StrEnum):
    BEGUN = "begun"
    CHECKED = "checked"
    SPOKEN = "spoken"
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class BudgetRecheck:
    """The budget's verdict on a deliberation that holds its chat; ``until`` only for ``snooze``."""

    verdict: Recheck
    reason: str
    until: float | None = None

    @property
    def proceed(self) -> bool:
        return self.verdict is Recheck.PROCEED


class Deliberation:
    """A begun activation on its way to its one finish (see the module docstring)."""

    __slots__ = ("_activation", "_event", "_kernel", "_outcome", "_stage")

    def __init__(self, kernel: Kernel, activation: Activation, event: BotEvent) -> None:
        self._kernel = kernel
        self._activation = activation
        self._event = event
        self._stage = Stage.BEGUN
        self._outcome: EventState | None = None

    # -- what it is about -------------------------------------------------------------------------

    @property
    def event(self) -> BotEvent:
        """The event as it stands now (``deliberating`` until the finish, then its final state)."""
        return self._event

    @property
    def chat_id(self) -> str:
        return self._event.chat_id

    @property
    def forced(self) -> bool:
        """Whether the activation is forced (an @, a reply to the bot, a private message, a reminder)."""
        return self._event.payload.get("forced") is True

    @property
    def trigger(self) -> ChatMessage | None:
        """The message this activation answers, as the kernel ingested it (see the module docstring)."""
        return self._activation.trigger

    @property
    def stage(self) -> Stage:
        return self._stage

    @property
    def finished(self) -> bool:
        return self._stage is Stage.FINISHED

    @property
    def outcome(self) -> EventState | None:
        """How it was finished (``None`` while open)."""
        return self._outcome

    # -- the sequence -----------------------------------------------------------------------------

    def recheck(self, now: float) -> BudgetRecheck:
        """Ask the chat's budget again (forced or normal, as the activation is).

        Refused with a ``retry_at`` within the event's deadline, the deliberation is finished
        ``snoozed`` until then; refused otherwise it is finished ``skipped`` (``budget: <why>``).
        """
        self._require(Stage.BEGUN, "recheck")
        kernel = self._kernel
        verdict = kernel.budgets.actor(self.chat_id).can_speak(now, forced=self.forced)
        if verdict.allowed:
            self._stage = Stage.CHECKED
            return BudgetRecheck(Recheck.PROCEED, verdict.reason)
        retry = verdict.retry_by(self._event.deadline)
        if retry is not None:
            self.finish(now, EventState.SNOOZED, until=retry)
            return BudgetRecheck(Recheck.SNOOZE, verdict.reason, retry)
        reason = f"budget: {verdict.reason}"
        self.finish(now, EventState.SKIPPED, reason=reason)
        return BudgetRecheck(Recheck.SKIP, reason)

    def spoke(self, now: float, *, forced: bool | None = None, sent: Iterable[ChatMessage] = ()) -> None:
        """The bot has spoken for this activation: spend the chat's budget, note what was ``sent``.

        ``forced`` defaults to the activation's own; a caller answering a non-forced activation with
        a forced kind of speech (a reminder, the graceful message) says so.
        """
        self._require(Stage.CHECKED, "spoke")
        kernel = self._kernel
        kernel.record_speech(self.chat_id, now, forced=self.forced if forced is None else forced)
        for message in sent:
            kernel.note_outgoing(message)
        self._stage = Stage.SPOKEN

    def finish(
        self,
        now: float,
        outcome: str | EventState,
        *,
        until: float | None = None,
        reason: str | None = None,
    ) -> BotEvent:
        """End it, exactly once: ``replied`` (after :meth:`spoke`), ``skipped`` (``reason``),
        ``expired`` or ``snoozed`` ``until``. See :meth:`Kernel.finish` for what each does."""
        state = EventState(outcome)
        if self._stage is Stage.FINISHED:
            raise IllegalTransition(_WHAT, self._stage.value, state.value)
        if state is EventState.REPLIED and self._stage is not Stage.SPOKEN:
            raise IllegalTransition(_WHAT, self._stage.value, state.value)
        event = self._kernel.finish(self._event.id, now, state, until=until, reason=reason)
        self._event = event
        self._stage = Stage.FINISHED
        self._outcome = state
        return event

    def _require(self, stage: Stage, step: str) -> None:
        if self._stage is not stage:
            raise IllegalTransition(_WHAT, self._stage.value, step)
