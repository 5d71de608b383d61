"""Which messages were already delivered: a repeated delivery is stored once, ingested once, answered once.

A OneBot implementation may send one event twice (a reconnect, a retry), and the edge's inbound
journal re-delivers at start-up what it received before a kill -9. The runtime's entry asks
:class:`RecentDeliveries` first: a copy of a message it has seen (``runtime.store.records``'s
``delivery_key`` within ``DUPLICATE_WINDOW``) goes no further. The set is in memory and bounded; at
start it is filled with the messages the store restores, so a copy of one committed before a restart
is known too, and the store itself keeps one row per delivery whatever reaches it.

A platform id is not enough to say "seen": ids repeat over a long history, and a message with a known
id but another sender or text is a new message.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from runtime.store.records import DUPLICATE_WINDOW, delivery_key

__all__ = ["RecentDeliveries"]


class RecentDeliveries:
    """The last ``size`` deliveries, by delivery key (the text by its hash), with their first time."""

    __slots__ = ("_seen", "_size", "_window", "repeats")

    def __init__(self, size: int = 16_384, window: float = DUPLICATE_WINDOW) -> None:
        self._size = size
        self._window = window
        self._seen: OrderedDict[tuple[str, str, str, int], float] = OrderedDict()
        self.repeats = 0

    @staticmethod
    def _key(message: Any) -> tuple[str, str, str, int]:
        chat_id, message_id, sender, text = delivery_key(message)
        return (chat_id, message_id, sender, hash(text))

    def note(self, message: Any) -> None:
        """Remember a delivery (a restored message, one the bot sent)."""
        key = self._key(message)
        if key not in self._seen:
            self._seen[key] = message.time
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)

    def repeated(self, message: Any) -> bool:
        """Whether ``message`` is a copy of one already delivered; a new one is remembered."""
        key = self._key(message)
        first = self._seen.get(key)
        if first is not None and abs(message.time - first) <= self._window:
            self.repeats += 1
            return True
        self._seen[key] = message.time
        self._seen.move_to_end(key)
        while len(self._seen) > self._size:
            self._seen.popitem(last=False)
        return False

    def __len__(self) -> int:
        return len(self._seen)
