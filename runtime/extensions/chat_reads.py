"""Which chats a life source has read its stored items for, and the reading of the others.

The follow-ups and memory hooks live in the store, per chat, and no query lists every chat's. A
source reads a chat's items the first time a tick names the chat (``LifeContext.known_chats``) or the
first time it writes one there. The reads happen off the tick, in a background task
(:meth:`ChatReads.run`): a tick stays as fast as the sources' in-memory work, and an episode the
bot is running is not held up behind store round trips. Without a task (a bare host) :meth:`poll`
reads inline, a bounded number per tick. The chats read are bounded; one that falls out is read
again when it comes back.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable

import anyio
import anyio.lowlevel

__all__ = ["ChatReads"]

_PER_ROUND = 64  # chats read in one round (one tick's worth when inline)


class ChatReads:
    """See the module docstring. ``read(chat_id)`` returns whether it succeeded (a failed read is
    tried again later); ``forget(chat_id)`` drops a chat's items when it falls out."""

    def __init__(
        self,
        read: Callable[[str], Awaitable[bool]],
        forget: Callable[[str], None],
        *,
        max_chats: int = 4_096,
    ) -> None:
        self._read = read
        self._forget = forget
        self._max_chats = max_chats
        self._done: OrderedDict[str, None] = OrderedDict()
        self._waiting: dict[str, None] = {}
        self._wake = anyio.Event()
        self._reading = False
        self.background = False

    @property
    def busy(self) -> bool:
        """Chats are waiting to be read, or a round is reading them."""
        return bool(self._waiting) or self._reading

    def read_already(self, chat_id: str) -> bool:
        return chat_id in self._done

    async def ensure(self, chat_id: str) -> None:
        """Read ``chat_id`` now, unless it was."""
        if chat_id not in self._done and await self._read(chat_id):
            self._mark(chat_id)

    async def poll(self, chats: Iterable[str]) -> None:
        """A tick named ``chats``: queue those not read yet (and read a round inline, with no task)."""
        for chat_id in chats:
            if chat_id not in self._done:
                self._waiting[chat_id] = None
        if not self._waiting:
            return
        if self.background:
            self._wake.set()
        else:
            await self.round()

    async def round(self) -> int:
        """Read up to a round of the waiting chats; how many were read."""
        read = 0
        self._reading = True
        try:
            for chat_id in list(self._waiting)[:_PER_ROUND]:
                del self._waiting[chat_id]
                if chat_id not in self._done and await self._read(chat_id):
                    self._mark(chat_id)
                    read += 1
        finally:
            self._reading = False
        return read

    async def run(self) -> None:
        """The background task: a round whenever a tick queued chats."""
        self.background = True
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                while self._waiting:
                    await self.round()
                    await anyio.lowlevel.checkpoint()
        finally:
            self.background = False

    def _mark(self, chat_id: str) -> None:
        self._done[chat_id] = None
        while len(self._done) > self._max_chats:
            gone, _ = self._done.popitem(last=False)
            self._forget(gone)
