"""Which pending message activation a newer message supersedes (``scheduling.supersede``).

One pending *message* activation per key: the conversation thread (``thread`` policy) or the chat
(``chat``). A newer scheduled or forced message of the same key cancels the older one through the
scheduler (``skipped``, reason ``superseded by <id>``); the cancellation is kept as a report that
the next ``Kernel.due`` hands out once. Activations of other kinds (waits, life sources) have no key
and are never superseded.
"""

from __future__ import annotations

from collections import deque

from runtime.kernel._build import builder
from runtime.kernel.events import BotEvent, EventState, EventStore
from runtime.kernel.outcomes import Activation, ActivationOutcome
from runtime.kernel.scheduler import ActivationScheduler
from runtime.kernel.settings import Supersede

__all__ = ["MESSAGE_KIND", "Supersession"]

MESSAGE_KIND = "message"
# Reports waiting for due(); a caller that never calls due() loses the oldest, never memory.
_MAX_REPORTS = 4_096
_WAITING = frozenset({EventState.SCHEDULED, EventState.SNOOZED})
# Bound once: an Enum class attribute lookup costs ~10x a global, and key() runs per scheduled message.
_NONE, _THREAD = Supersede.NONE, Supersede.THREAD
_SUPERSEDED = ActivationOutcome.SUPERSEDED
_activation = builder(Activation)  # positional, through the slots: one per superseded message


class Supersession:
    """The pending message activation per key, and the reports of those superseded."""

    __slots__ = ("_events", "_pending", "_policy", "_reports", "_scheduler", "total")

    def __init__(self, policy: Supersede, events: EventStore, scheduler: ActivationScheduler) -> None:
        self._policy = policy
        self._events = events
        self._scheduler = scheduler
        self._pending: dict[str, str] = {}  # key -> event id
        self._reports: deque[Activation] = deque(maxlen=_MAX_REPORTS)
        self.total = 0

    def key(self, event: BotEvent) -> str | None:
        policy = self._policy
        if policy is _NONE or event.kind != MESSAGE_KIND:
            return None
        return event.thread_id if policy is _THREAD and event.thread_id else event.chat_id

    def supersede(self, event: BotEvent, now: float) -> tuple[str, ...]:
        """``event`` (scheduled, or acted on now) replaces its key's pending activation."""
        key = self.key(event)
        if key is None:
            return ()
        old = self._pending.get(key)
        if event.state in _WAITING:
            self._pending[key] = event.id
        elif old is not None:
            del self._pending[key]
        if old is None or old == event.id:
            return ()
        reason = f"superseded by {event.id}"
        if not self._scheduler.cancel(old, now, reason=reason):
            return ()
        skipped = self._events.get(old)
        if skipped is not None:
            self._reports.append(_activation(skipped, _SUPERSEDED, reason, None))
        self.total += 1
        return (old,)

    def hold(self, event: BotEvent) -> None:
        """A waiting message activation becomes its key's pending one (unless another already is)."""
        key = self.key(event)
        if key is not None:
            self._pending.setdefault(key, event.id)

    def release(self, event: BotEvent) -> None:
        """Forget the entry of an event leaving the scheduler."""
        pending = self._pending
        for key in (event.thread_id, event.chat_id):
            if key is not None and pending.get(key) == event.id:
                del pending[key]

    def drain(self) -> list[Activation]:
        """The reports since the last drain, oldest first."""
        out = list(self._reports)
        self._reports.clear()
        return out
