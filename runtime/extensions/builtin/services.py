"""The services the built-in extensions ask their host for, each a narrow protocol.

A host offers them by type (``services={MemoryWriter: store, ...}``); an extension asking for one the
host lacks is refused at setup with the missing type named.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from runtime.store.protocol import MemoryScope
from runtime.store.records import Memory

__all__ = ["Ids", "MemoryShelf", "MemoryWriter", "ReminderBook", "ReminderLimits", "TimeZone"]


class MemoryWriter(Protocol):
    async def upsert_memory(self, memory: Memory) -> None: ...


class MemoryShelf(Protocol):
    """The store's memory rows, for a life source that keeps its items among the memories (follow-ups,
    memory hooks): read, write, delete, and list a scope's."""

    async def upsert_memory(self, memory: Memory) -> None: ...

    async def get_memory(self, memory_id: str) -> Memory | None: ...

    async def delete_memory(self, memory_id: str) -> bool: ...

    async def list_memories(
        self,
        *,
        scopes: Collection[MemoryScope],
        memory_types: Collection[str] | None = None,
        tags: Collection[str] | None = None,
        since: float | None = None,
        min_importance: float | None = None,
        limit: int | None = None,
    ) -> list[Memory]: ...


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
