"""The admin ``why``: the last ingest results of each chat, kept by message id, bounded.

Others may hear each result as it is noted (the console's live view): :meth:`WhyLog.subscribe`. A
listener runs on the message's path, so it must be quick; one that raises is logged, and the message
goes on its way.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import structlog

from runtime.kernel.outcomes import IngestResult

__all__ = ["WhyLog"]

log = structlog.get_logger("greywind.why")


class WhyLog:
    """The last ``size`` ingest results of each chat, by message id (the admin ``why``), for the
    ``max_chats`` chats heard from most recently: bounded however many chats the account is in."""

    __slots__ = ("_by_chat", "_listeners", "_max_chats", "_size")

    def __init__(self, size: int, max_chats: int = 4_096) -> None:
        self._size = size
        self._max_chats = max_chats
        self._by_chat: OrderedDict[str, OrderedDict[str, IngestResult]] = OrderedDict()
        self._listeners: list[Callable[[IngestResult], None]] = []

    def subscribe(self, listener: Callable[[IngestResult], None]) -> Callable[[], None]:
        """Hear every result noted from now on; returns the disposer."""
        self._listeners.append(listener)

        def dispose() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return dispose

    def note(self, result: IngestResult) -> None:
        chat_id = result.message.chat_id
        chat = self._by_chat.get(chat_id)
        if chat is None:
            chat = self._by_chat[chat_id] = OrderedDict()
            while len(self._by_chat) > self._max_chats:
                self._by_chat.popitem(last=False)
        else:
            self._by_chat.move_to_end(chat_id)
        chat[result.message.message_id] = result
        chat.move_to_end(result.message.message_id)
        while len(chat) > self._size:
            chat.popitem(last=False)
        for listener in tuple(self._listeners):
            try:
                listener(result)
            except Exception as exc:  # a listener's fault stays its own
                log.warning("why_listener_failed", error=repr(exc))

    def get(self, chat_id: str, message_id: str | None) -> IngestResult | None:
        chat = self._by_chat.get(chat_id)
        if not chat:
            return None
        if message_id is None:
            return next(reversed(chat.values()))
        return chat.get(message_id)

    def recent(self, chat_id: str) -> list[IngestResult]:
        """The chat's kept results, oldest first."""
        return list(self._by_chat.get(chat_id, {}).values())

    def chats(self) -> list[str]:
        """The chats with kept results, the most recently heard first."""
        return list(reversed(self._by_chat))
