"""Which chats are alive: the time of the last *real* message in each.

Only messages from people count. The bot's own messages — proactive ones above all — never do, so a
group that went quiet stays quiet: silence is not activity, and the bot cannot keep a chat "alive"
by talking into it.

After a restart the stored messages put back into the conversation threads cover only the restore
window (``[store] restore_message_window_ms``, an hour); a chat silent since longer would look as if
nobody had ever spoken there, and a follow-up or a memory hook due in it days later could never be
heard. :func:`restore_activity` puts back each chat's last real message time over the longer grounds
window, from the stored messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog

from runtime.kernel.message import ChatMessage
from runtime.store.errors import StoreError
from runtime.store.records import StoredMessage

log = structlog.get_logger("greywind.life")

# Stored messages read per chat for its last real one (the bot's own do not count).
_PER_CHAT = 20


class ChatActivity(Protocol):
    def last_activity(self, chat_id: str) -> float | None:
        """When the last real (non-bot) message arrived in ``chat_id``; ``None`` if never."""
        ...

    def recent_chats(self, since: float) -> list[str]:
        """Chats with a real message at or after ``since``, most recent first."""
        ...


@dataclass(frozen=True, slots=True)
class ChatActivityStatistics:
    chats: int
    noted: int
    ignored_own: int


class ChatActivityLog:
    """An in-memory :class:`ChatActivity` fed by the edge with every incoming message."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._noted = 0
        self._ignored = 0

    def note(self, message: ChatMessage) -> None:
        if message.from_self:
            self._ignored += 1
            return
        self._noted += 1
        previous = self._last.get(message.chat_id)
        if previous is None or message.time > previous:
            self._last[message.chat_id] = message.time

    def restore(self, chat_id: str, when: float) -> None:
        """Put back a chat's last real message time after a restart."""
        if when > self._last.get(chat_id, float("-inf")):
            self._last[chat_id] = when

    def last_activity(self, chat_id: str) -> float | None:
        return self._last.get(chat_id)

    def recent_chats(self, since: float) -> list[str]:
        live = [(t, c) for c, t in self._last.items() if t >= since]
        return [c for _, c in sorted(live, reverse=True)]

    def prune(self, before: float) -> int:
        """Forget chats silent since before ``before``; how many were forgotten."""
        stale = [c for c, t in self._last.items() if t < before]
        for chat_id in stale:
            del self._last[chat_id]
        return len(stale)

    def statistics(self) -> ChatActivityStatistics:
        return ChatActivityStatistics(chats=len(self._last), noted=self._noted, ignored_own=self._ignored)


class StoredMessages(Protocol):
    async def messages_since(self, since: float, *, per_chat: int = 200) -> Sequence[StoredMessage]: ...


async def restore_activity(activity: ChatActivityLog, store: StoredMessages, *, since: float) -> int:
    """Put back the last real message time of every chat someone spoke in at or after ``since``; how
    many chats. A store that cannot answer is logged and costs nothing else."""
    try:
        messages = await store.messages_since(since, per_chat=_PER_CHAT)
    except StoreError as exc:
        log.warning("chat_activity_not_restored", error=str(exc))
        return 0
    chats: set[str] = set()
    for message in messages:
        if not message.from_self:
            activity.restore(message.chat_id, message.time)
            chats.add(message.chat_id)
    return len(chats)
