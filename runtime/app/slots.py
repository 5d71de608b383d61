"""Episode slots: how many episodes run at once, with room kept for the ones someone asked for.

Every episode takes a slot for as long as it runs (its model calls, tools and send). There are
``shared`` slots any episode may take and ``reserved`` ones only forced episodes (an @, a reply to the
bot, a private message, a poke) may take, so unprompted episodes, however many chats wake the bot,
never leave an addressed message waiting; and a model that hangs in some chats holds at most
``shared + reserved`` of them, one per chat (the activation loop takes a chat's lock before its slot).
When a slot frees, a waiting forced episode gets it before an unprompted one; each kind waits in
arrival order, and since a chat waits with one episode at most, that is round-robin across chats.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import anyio

__all__ = ["EpisodeSlots", "SlotStatistics"]


@dataclass(frozen=True, slots=True)
class SlotStatistics:
    shared: int
    reserved: int
    in_use_shared: int
    in_use_reserved: int
    waiting_forced: int
    waiting_unprompted: int


class _Waiter:
    __slots__ = ("event", "reserved")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.reserved: bool | None = None  # the slot handed over: reserved or shared


class EpisodeSlots:
    def __init__(self, shared: int, reserved: int) -> None:
        if shared < 1 or reserved < 0:
            raise ValueError("episode slots need at least one shared slot and a reserve of zero or more")
        self._shared = shared
        self._reserved = reserved
        self._free_shared = shared
        self._free_reserved = reserved
        self._forced: deque[_Waiter] = deque()
        self._unprompted: deque[_Waiter] = deque()

    async def acquire(self, *, forced: bool) -> bool:
        """Wait for a slot; True when it is a reserved one (give it back with ``release(True)``)."""
        if self._free_shared and (forced or not self._forced):
            self._free_shared -= 1
            return False
        if forced and self._free_reserved:
            self._free_reserved -= 1
            return True
        waiter = _Waiter()
        waiters = self._forced if forced else self._unprompted
        waiters.append(waiter)
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.reserved is None:
                waiters.remove(waiter)
            else:  # handed a slot it will not use
                self.release(waiter.reserved)
            raise
        assert waiter.reserved is not None
        return waiter.reserved

    def release(self, reserved: bool) -> None:
        """Give a slot back, straight to the waiter it is for: forced ones first."""
        if self._forced:
            self._hand(self._forced.popleft(), reserved)
        elif not reserved and self._unprompted:
            self._hand(self._unprompted.popleft(), reserved)
        elif reserved:
            self._free_reserved += 1
        else:
            self._free_shared += 1

    @staticmethod
    def _hand(waiter: _Waiter, reserved: bool) -> None:
        waiter.reserved = reserved
        waiter.event.set()

    def statistics(self) -> SlotStatistics:
        return SlotStatistics(
            shared=self._shared,
            reserved=self._reserved,
            in_use_shared=self._shared - self._free_shared,
            in_use_reserved=self._reserved - self._free_reserved,
            waiting_forced=len(self._forced),
            waiting_unprompted=len(self._unprompted),
        )
