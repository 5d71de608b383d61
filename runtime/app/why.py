"""The admin ``why``: the last ingest results of each chat, kept by message id, bounded."""

from __future__ import annotations

from collections import OrderedDict

from runtime.kernel.outcomes import IngestResult

__all__ = ["WhyLog"]


class WhyLog:
    """The last ``size`` ingest results of each chat, by message id (the admin ``why``), for the
    ``max_chats`` chats heard from most recently: bounded however many chats the account is in."""

    __slots__ = ("_by_chat", "_max_chats", "_size")

    def __init__(self, size: int, max_chats: int = 4_096) -> None:
        self._size = size
        self._max_chats = max_chats
        self._by_chat: OrderedDict[str, OrderedDict[str, IngestResult]] = OrderedDict()

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

    def get(self, chat_id: str, message_id: str | None) -> IngestResult | None:
        chat = self._by_chat.get(chat_id)
        if not chat:
            return None
        if message_id is None:
            return next(reversed(chat.values()))
        return chat.get(message_id)
