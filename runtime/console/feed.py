"""The live view's feed: each message's decision and each reply, handed to the browsers watching
that chat, through bounded queues.

A browser subscribes to one chat (the page shows one group at a time, so 200 busy groups cost a
watcher only its own group's traffic). The feed hears every ingest result from the runtime's
``WhyLog`` and every sent (or, in shadow mode, would-be) reply from the outbound port; a result for a
chat nobody watches costs a counter and a dictionary lookup. Each subscription holds at most
``per_client`` items: when a browser reads slower than its group talks, the oldest items go and the
count of what went is sent as one ``dropped`` line instead, so a slow client never holds memory or the
message path. The number of subscriptions is bounded too (:class:`TooManyWatchers`).

The feed also counts messages per minute (for the whole bot and per chat), which the overview shows.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from runtime.console.views import reply_view, result_view
from runtime.kernel.events import TERMINAL_STATES, EventState
from runtime.kernel.kernel import Kernel
from runtime.kernel.outcomes import IngestResult
from runtime.ports import SentRecord

__all__ = ["LiveFeed", "Subscription", "TooManyWatchers"]

PER_CLIENT = 256
MAX_WATCHERS = 64
RATE_CHATS = 4_096
_TRACKED = 256


class TooManyWatchers(RuntimeError):
    """Every subscription slot is taken."""


class Subscription:
    """One browser's view of one chat: a bounded queue and the activations it still waits on."""

    def __init__(self, chat_id: str, size: int) -> None:
        self.chat_id = chat_id
        self._items: deque[dict[str, Any]] = deque(maxlen=size)
        self._wake = asyncio.Event()
        self.dropped = 0  # since the last take
        self.dropped_total = 0
        self._pending: OrderedDict[str, tuple[str, EventState]] = OrderedDict()  # event -> (message, state)

    def push(self, item: dict[str, Any]) -> None:
        if len(self._items) == self._items.maxlen:
            self.dropped += 1
            self.dropped_total += 1
        self._items.append(item)
        self._wake.set()

    async def take(self, wait: float) -> tuple[list[dict[str, Any]], int]:
        """What arrived (waiting up to ``wait`` seconds for something), and how many were dropped."""
        if not self._items:
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)
        items = list(self._items)
        self._items.clear()
        dropped, self.dropped = self.dropped, 0
        for item in items:
            if item["kind"] == "message" and item["state"] not in {s.value for s in TERMINAL_STATES}:
                self._pending[item["event_id"]] = (item["message_id"], EventState(item["state"]))
                while len(self._pending) > _TRACKED:
                    self._pending.popitem(last=False)
        return items, dropped

    def changes(self, kernel: Kernel) -> list[tuple[str, Any]]:
        """(message id, event) for each watched activation whose state moved since it was sent."""
        moved: list[tuple[str, Any]] = []
        for event_id, (message_id, state) in list(self._pending.items()):
            event = kernel.events.get(event_id)
            if event is None:
                del self._pending[event_id]
                continue
            if event.state is not state:
                moved.append((message_id, event))
                if event.state in TERMINAL_STATES:
                    del self._pending[event_id]
                else:
                    self._pending[event_id] = (message_id, event.state)
        return moved


class LiveFeed:
    """See the module docstring."""

    def __init__(
        self,
        kernel: Kernel,
        clock: Callable[[], float],
        *,
        per_client: int = PER_CLIENT,
        max_watchers: int = MAX_WATCHERS,
    ) -> None:
        self._kernel = kernel
        self._clock = clock
        self._per_client = per_client
        self._max_watchers = max_watchers
        self._watchers: dict[str, list[Subscription]] = {}
        self._count = 0
        self._seconds: deque[list[int]] = deque(maxlen=61)  # [second, messages]
        self._by_chat: OrderedDict[str, deque[float]] = OrderedDict()

    # -- what the runtime tells it --------------------------------------------------------------

    def on_result(self, result: IngestResult) -> None:
        chat_id = result.message.chat_id
        self._note_rate(chat_id)
        watchers = self._watchers.get(chat_id)
        if watchers:
            event = self._kernel.events.get(result.event.id)
            view = result_view(result, event)
            for subscription in watchers:
                subscription.push(view)

    def on_sent(self, record: SentRecord) -> None:
        watchers = self._watchers.get(record.chat_id)
        if watchers:
            view = reply_view(record)
            for subscription in watchers:
                subscription.push(view)

    # -- watchers -------------------------------------------------------------------------------

    def subscribe(self, chat_id: str) -> Subscription:
        if self.watchers() >= self._max_watchers:
            raise TooManyWatchers(f"{self._max_watchers} live views are open already")
        subscription = Subscription(chat_id, self._per_client)
        self._watchers.setdefault(chat_id, []).append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        watchers = self._watchers.get(subscription.chat_id, [])
        if subscription in watchers:
            watchers.remove(subscription)
        if not watchers:
            self._watchers.pop(subscription.chat_id, None)

    def watchers(self) -> int:
        return sum(len(w) for w in self._watchers.values())

    # -- rates ----------------------------------------------------------------------------------

    def _note_rate(self, chat_id: str) -> None:
        now = self._clock()
        self._count += 1
        second = int(now)
        if self._seconds and self._seconds[-1][0] == second:
            self._seconds[-1][1] += 1
        else:
            self._seconds.append([second, 1])
        times = self._by_chat.get(chat_id)
        if times is None:
            times = self._by_chat[chat_id] = deque(maxlen=600)
            while len(self._by_chat) > RATE_CHATS:
                self._by_chat.popitem(last=False)
        else:
            self._by_chat.move_to_end(chat_id)
        times.append(now)

    def per_minute(self) -> int:
        """Messages heard in the last 60 seconds, all chats."""
        since = int(self._clock()) - 60
        return sum(count for second, count in self._seconds if second > since)

    def chat_per_minute(self, chat_id: str) -> int:
        times = self._by_chat.get(chat_id)
        if not times:
            return 0
        since = self._clock() - 60
        return sum(1 for t in times if t > since)

    def last_heard(self, chat_id: str) -> float | None:
        times = self._by_chat.get(chat_id)
        return times[-1] if times else None

    @property
    def heard(self) -> int:
        return self._count
