"""The services the built-in extensions ask their host for, each a narrow protocol.

A host offers them by type (``services={MemoryWriter: store, ...}``); an extension asking for one the
host lacks is refused at setup with the missing type named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from runtime.store.records import Memory

__all__ = ["Ids", "MemoryWriter", "ReminderBook", "ReminderLimits", "TimeZone"]


class MemoryWriter(Protocol):
    async def upsert_memory(self, memory: Memory) -> None: ...


class Ids(Protocol):
    """New unique ids (``ids("mem")`` -> ``"mem-..."``)."""

    def __call__(self, prefix: str) -> str: ...


class ReminderBook(Protocol):
    """Reminders as kernel activations: how many wait in a chat, and a new one committed to the store."""

    def pending(self, chat_id: str) -> int: ...

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
        """The reminder's event id once it is saved; None when the store could not take it (then it
        is withdrawn)."""
        ...


@dataclass(frozen=True, slots=True)
class TimeZone:
    """The IANA zone the persona tells time in (``[runtime] timezone``)."""

    name: str


@dataclass(frozen=True, slots=True)
class ReminderLimits:
    max_ahead_ms: int
    grace_ms: int
    per_chat: int
