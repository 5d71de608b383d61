"""Where proactive activations go: the kernel's scheduler, seen through a small protocol.

Waiting episodes and life sources only ever *schedule* and *cancel* activations; the kernel decides
when they fall due (``Kernel.due``), applies the chat's budget and hands them to the bot. The
protocol matches ``Kernel.schedule_activation`` and ``Kernel.cancel``: the kernel is the sink.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


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
