"""Where proactive activations go: the kernel's scheduler, seen through a small protocol.

Waiting episodes and life sources only ever *schedule* and *cancel* activations; the kernel decides
when they fall due (``Kernel.due``), applies the chat's budget and hands them to the bot. The
protocol matches ``Kernel.schedule_activation``; :class:`SchedulerSink` adapts a bare
EventStore + ActivationScheduler pair (tests, replay) to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from runtime.kernel.events import EventState, EventStore
from runtime.kernel.scheduler import ActivationScheduler


class Scheduled(Protocol):
    """The scheduled activation; only its id is needed to cancel it."""

    @property
    def id(self) -> str: ...


class ActivationSink(Protocol):
    def schedule_activation(
        self,
        kind: str,
        chat_id: str,
        *,
        now: float,
        not_before: float,
        deadline: float | None,
        priority: float,
        thread_id: str | None,
        payload: Mapping[str, object] | None,
    ) -> Scheduled: ...

    def cancel(self, event_id: str, now: float) -> bool: ...


class SchedulerSink:
    """An :class:`ActivationSink` over an EventStore and its ActivationScheduler."""

    def __init__(self, store: EventStore, scheduler: ActivationScheduler) -> None:
        self.store = store
        self.scheduler = scheduler

    def schedule_activation(
        self,
        kind: str,
        chat_id: str,
        *,
        now: float,
        not_before: float,
        deadline: float | None,
        priority: float,
        thread_id: str | None,
        payload: Mapping[str, object] | None,
    ) -> Scheduled:
        event = self.store.create(
            kind=kind,
            chat_id=chat_id,
            now=now,
            thread_id=thread_id,
            not_before=not_before,
            deadline=deadline,
            priority=priority,
            payload=payload,
        )
        # A proactive activation needs no attention score: it is classified by whoever proposed it.
        self.store.transition(event.id, EventState.CLASSIFIED, now)
        return self.scheduler.schedule(event.id, now)

    def cancel(self, event_id: str, now: float) -> bool:
        return self.scheduler.cancel(event_id, now)
