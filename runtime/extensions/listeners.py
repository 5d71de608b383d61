"""Message listeners: extensions hear each incoming message, off the message's path.

``notify`` only puts the message into each listener's bounded inbox and returns; every listener is
served by its own task, so a listener that raises, hangs or blocks never holds a chat. An ``async``
listener is cancelled after ``timeout`` seconds; a plain function runs in a worker thread and is
abandoned after the same bound (while that thread is still blocked, the listener's next messages are
skipped as slow: a stuck listener holds one thread, not one per message). Each failure is one log
line naming the extension; a listener that falls behind loses the oldest messages it has not read,
counted and logged at the first loss and every hundredth after.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import structlog
from anyio.abc import TaskGroup

from runtime.kernel.message import ChatMessage

__all__ = ["Listener", "ListenerStatistics", "MessageListeners"]

log = structlog.get_logger("greywind.extensions")

Listener = Callable[[ChatMessage], "Awaitable[None] | None"]

DEFAULT_TIMEOUT = 2.0
DEFAULT_INBOX = 256


@dataclass(frozen=True, slots=True)
class ListenerStatistics:
    listeners: int
    delivered: int
    failed: int
    timed_out: int
    dropped: int


class _Served:
    """One listener: its inbox, its wake-up event and its task's cancel scope."""

    __slots__ = ("busy", "cancel", "extension", "function", "inbox", "limiter", "wake")

    def __init__(self, extension: str, function: Listener, size: int) -> None:
        self.extension = extension
        self.function = function
        self.inbox: deque[ChatMessage] = deque(maxlen=size)
        self.wake = anyio.Event()
        self.cancel = anyio.CancelScope()
        self.limiter = anyio.CapacityLimiter(1)
        # A plain function's thread still running (abandoned after the timeout): no second one starts.
        self.busy = False

    def call(self, message: ChatMessage) -> object:
        try:
            return self.function(message)
        finally:
            self.busy = False


class MessageListeners:
    """See the module docstring. Listeners added before :meth:`start` begin serving at start."""

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT, inbox: int = DEFAULT_INBOX) -> None:
        if timeout <= 0 or inbox < 1:
            raise ValueError("a listener needs a positive timeout and an inbox of at least one")
        self._timeout = timeout
        self._inbox = inbox
        self._served: dict[int, _Served] = {}
        self._next = 0
        self._task_group: TaskGroup | None = None
        self._delivered = self._failed = self._timed_out = self._dropped = 0

    def start(self, task_group: TaskGroup) -> None:
        self._task_group = task_group
        for served in self._served.values():
            task_group.start_soon(self._serve, served)

    def add(self, extension: str, listener: Listener) -> Callable[[], None]:
        """Serve ``listener`` for ``extension``; the returned disposer stops it (its task ends)."""
        key = self._next
        self._next += 1
        served = _Served(extension, listener, self._inbox)
        self._served[key] = served
        if self._task_group is not None:
            self._task_group.start_soon(self._serve, served)

        def dispose() -> None:
            gone = self._served.pop(key, None)
            if gone is not None:
                gone.cancel.cancel()

        return dispose

    def notify(self, message: ChatMessage) -> None:
        """Hand ``message`` to every listener; never waits, never raises."""
        for served in self._served.values():
            if len(served.inbox) == served.inbox.maxlen:
                self._dropped += 1
                if self._dropped == 1 or self._dropped % 100 == 0:
                    log.warning("listener_lagging", extension=served.extension, dropped=self._dropped)
            served.inbox.append(message)
            served.wake.set()

    def __len__(self) -> int:
        return len(self._served)

    async def _serve(self, served: _Served) -> None:
        with served.cancel:
            while True:
                if not served.inbox:
                    served.wake = anyio.Event()
                    await served.wake.wait()
                    continue
                await self._deliver(served, served.inbox.popleft())

    async def _deliver(self, served: _Served, message: ChatMessage) -> None:
        function = served.function
        if served.busy:
            # Its thread is still blocked on an earlier message: this one is skipped.
            self._slow(served, message)
            return
        try:
            with anyio.move_on_after(self._timeout) as bound:
                if inspect.iscoroutinefunction(function):
                    await function(message)
                else:
                    served.busy = True
                    await anyio.to_thread.run_sync(
                        served.call, message, abandon_on_cancel=True, limiter=served.limiter
                    )
        except Exception as exc:
            self._failed += 1
            log.warning(
                "listener_failed", extension=served.extension, chat_id=message.chat_id, error=repr(exc)
            )
            return
        if bound.cancelled_caught:
            self._slow(served, message)
            return
        self._delivered += 1

    def _slow(self, served: _Served, message: ChatMessage) -> None:
        self._timed_out += 1
        log.warning(
            "listener_slow", extension=served.extension, chat_id=message.chat_id, seconds=self._timeout
        )

    def statistics(self) -> ListenerStatistics:
        return ListenerStatistics(
            listeners=len(self._served),
            delivered=self._delivered,
            failed=self._failed,
            timed_out=self._timed_out,
            dropped=self._dropped,
        )
