"""Episode slots: how many episodes run at once, with room kept for the ones someone asked for.

Every episode takes a slot for as long as it works with the model. There are ``shared`` slots any
episode may take and ``reserved`` ones only a *fresh* forced episode (an @, a reply to the bot, a
private message, a poke, in a chat that had no episode lately) may take. So unprompted episodes,
however many chats wake the bot, never leave an addressed message waiting; chats that ask again and
again (@-spam) compete for the shared slots only, leaving the reserve to the quiet chats; and a model
that hangs in some chats holds one slot per chat (the activation loop takes a chat's lock before its
slot). When a slot frees it goes to a waiting fresh forced episode, else a forced one, else an
unprompted one; each line is served in arrival order, and since a chat waits with one episode at
most, that is round-robin across chats.
A slot is for the model's work: an episode about to send (:func:`leave_slot`) gives it back, since a
send may wait seconds for the account's send rate and would keep every other chat from the model.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

import anyio

__all__ = ["EpisodeSlots", "GiveWay", "SlotStatistics", "gave_way", "holding", "leave_slot"]

_leave: ContextVar[Callable[[], None] | None] = ContextVar("greywind_episode_slot", default=None)
_giving: ContextVar[GiveWay | None] = ContextVar("greywind_give_way", default=None)


@dataclass(frozen=True, slots=True)
class SlotStatistics:
    shared: int
    reserved: int
    in_use_shared: int
    in_use_reserved: int
    waiting_forced: int
    waiting_unprompted: int


_FRESH, _FORCED, _UNPROMPTED = range(3)


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
        # Waiting lines, served in this order: fresh forced, forced, unprompted.
        self._lines: tuple[deque[_Waiter], ...] = (deque(), deque(), deque())

    async def acquire(self, *, forced: bool, fresh: bool = True) -> bool:
        """Wait for a slot; True when it is a reserved one (give it back with ``release(True)``).

        ``fresh``: the chat had no episode lately. Only a fresh forced episode takes the reserve, so
        chats asking again and again (@-spam) share the shared slots and a quiet chat finds room.
        """
        kind = _FRESH if forced and fresh else _FORCED if forced else _UNPROMPTED
        lines = self._lines
        if self._free_shared and not any(lines[k] for k in range(kind)):
            self._free_shared -= 1
            return False
        if kind == _FRESH and self._free_reserved:
            self._free_reserved -= 1
            return True
        waiter = _Waiter()
        lines[kind].append(waiter)
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.reserved is None:
                lines[kind].remove(waiter)
            else:  # handed a slot it will not use
                self.release(waiter.reserved)
            raise
        assert waiter.reserved is not None
        return waiter.reserved

    def release(self, reserved: bool) -> None:
        """Give a slot back, straight to the waiter it is for: fresh forced, forced, unprompted."""
        for kind, line in enumerate(self._lines):
            if line and (kind == _FRESH or not reserved):
                self._hand(line.popleft(), reserved)
                return
        if reserved:
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
            waiting_forced=len(self._lines[_FRESH]) + len(self._lines[_FORCED]),
            waiting_unprompted=len(self._lines[_UNPROMPTED]),
        )


@contextlib.contextmanager
def holding(release: Callable[[], None]) -> Iterator[None]:
    """Inside, :func:`leave_slot` gives the current task's slot back with ``release``."""
    token = _leave.set(release)
    try:
        yield
    finally:
        _leave.reset(token)


class GiveWay:
    """An unprompted episode that has not asked the model yet, under its chat's lock: a forced
    episode of its chat arriving (:meth:`ask`) cancels it, so the @ is not kept waiting for its
    context build and the model's answer. Inside :meth:`running`, :func:`gave_way` says whether it did."""

    __slots__ = ("asked", "scope")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.asked = False

    def ask(self) -> None:
        self.asked = True
        self.scope.cancel()

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        token = _giving.set(self)
        try:
            with self.scope:
                yield
        finally:
            _giving.reset(token)


def gave_way() -> bool:
    """The current episode is being cancelled to give way to a forced one of its chat."""
    giving = _giving.get()
    return giving is not None and giving.asked


def leave_slot() -> None:
    """The current episode is done with the model (it is about to send, which may wait for the
    account's send rate): its slot goes to the next episode now. Its chat's lock it keeps."""
    release = _leave.get()
    if release is not None:
        _leave.set(None)
        release()
