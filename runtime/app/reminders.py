"""Reminders as kernel activations: the :class:`~runtime.extensions.builtin.services.ReminderBook` the
``schedule_message`` extension writes into.

A reminder is an activation of kind ``reminder`` carrying the text, charged to the forced budget (a
user asked for it), committed to the store before it counts as scheduled: a store that cannot take it
withdraws it, so the tool never confirms a reminder a restart would lose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runtime.app.episodes import REMINDER_KIND
from runtime.kernel.events import EventState

if TYPE_CHECKING:
    from runtime.app.alarm import Alarm
    from runtime.app.persistence import StatePersistence
    from runtime.kernel.kernel import Kernel

__all__ = ["KernelReminders"]

_WAITING = (EventState.SCHEDULED, EventState.SNOOZED)


class KernelReminders:
    def __init__(self, kernel: Kernel, persistence: StatePersistence, alarm: Alarm) -> None:
        self._kernel = kernel
        self._persistence = persistence
        self._alarm = alarm

    def pending(self, chat_id: str) -> int:
        events = self._kernel.events.list(chat_id=chat_id, states=_WAITING)
        return sum(1 for event in events if event.kind == REMINDER_KIND)

    async def schedule(
        self,
        chat_id: str,
        text: str,
        *,
        now: float,
        at: float,
        deadline: float,
        thread_id: str | None,
        requested_by: str | None,
    ) -> str | None:
        event = self._kernel.schedule_activation(
            REMINDER_KIND,
            chat_id,
            now=now,
            not_before=at,
            deadline=deadline,
            priority=0.9,
            thread_id=thread_id,
            # A user asked for it: it is charged to the forced budget, like an answer to them.
            payload={"text": text, "forced": True, "requested_by": requested_by},
        )
        if not await self._persistence.commit_event(event):
            self._kernel.cancel(event.id, now, reason="not saved")
            return None
        self._alarm.poke()
        return event.id
