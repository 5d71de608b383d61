"""The OneBot v11 adapter with a guard in front of its WebSocket receive loop.

The stock adapter reads a frame, parses it and spawns a task to handle it, without limit, and closes
the connection on the first frame that is not JSON. Under a flood faster than NoneBot can handle
(about a thousand events per second on one core) every waiting event holds a parsed model, a task
and its coroutine, and memory grows without bound; a single garbled frame cuts the bot off.

:class:`GuardedAdapter` puts a :class:`FrameGuard` between the socket and that loop:

* a reader (one per connection) takes every frame as it arrives. API results (frames without
  ``post_type``) are handed to the adapter at once, so calls waiting on them never stall behind
  events. Frames that are not JSON are logged and skipped. A text segment without text is repaired
  (the adapter would fail on it and lose the message).
* Events wait as raw frames, in order, and reach the adapter's loop only while fewer than
  ``max_events_in_flight`` events are being handled. The raw frames waiting are capped at
  ``max_backlog_bytes``; past it the oldest are dropped, counted and logged. At a rate NoneBot can
  handle nothing waits and nothing is dropped; under a sustained flood memory stays bounded.

The adapter also serves HTTP POST event routes (``/onebot/v11/``, ``/onebot/v11/http``) that check only
``ONEBOT_SECRET``, never the access token: anyone who can reach the port could post a superuser's
command or register an account id that then locks the real account out. :class:`GuardedAdapter`
serves only the reverse WebSocket, and compares its access token in constant time.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import structlog
from nonebot.adapters.onebot.utils import get_auth_bearer
from nonebot.adapters.onebot.v11 import Adapter, Event, MessageEvent
from nonebot.drivers import HTTPServerSetup, Request, Response
from nonebot.exception import WebSocketClosed

__all__ = ["FrameGuard", "FrameGuardStatistics", "GuardedAdapter", "repair_segments"]

log = structlog.get_logger("greywind.onebot")

# While events wait for room, the guard looks again this often (only under overload).
_CAPACITY_POLL_SECONDS = 0.002


def repair_segments(event: object) -> bool:
    """Give a text segment without text an empty one (in place); True when something was repaired."""
    if not isinstance(event, dict) or not isinstance(event.get("message"), list):
        return False
    repaired = False
    for segment in event["message"]:
        if isinstance(segment, dict) and segment.get("type") == "text":
            data = segment.get("data")
            if not isinstance(data, dict):
                segment["data"] = data = {}
            if not isinstance(data.get("text"), str):
                data["text"] = "" if data.get("text") is None else str(data["text"])
                repaired = True
    return repaired


@dataclass(frozen=True, slots=True)
class FrameGuardStatistics:
    frames: int
    api_results: int
    events: int
    not_json: int
    repaired: int
    dropped: int  # events dropped because the backlog was full
    backlog: int  # events waiting now
    backlog_bytes: int
    max_backlog: int


class _Counters:
    __slots__ = ("api_results", "dropped", "events", "frames", "max_backlog", "not_json", "repaired")

    def __init__(self) -> None:
        self.frames = self.api_results = self.events = self.not_json = 0
        self.repaired = self.dropped = self.max_backlog = 0


class FrameGuard:
    """Wraps the driver's WebSocket for the adapter's receive loop; everything else passes through."""

    # Called with every event frame the moment it is read (parsed, and as received): the edge's
    # inbound journal. It must not raise.
    on_event_frame: ClassVar[Callable[[Any, str | bytes], None] | None] = None

    def __init__(
        self,
        ws: Any,
        *,
        in_flight: Any,  # a sized collection of the events being handled (the adapter's task set)
        deliver_result: Any,  # hands a parsed API result to the adapter
        max_events_in_flight: int,
        max_backlog_bytes: int,
        counters: _Counters | None = None,
    ) -> None:
        self._ws = ws
        self._in_flight = in_flight
        self._deliver_result = deliver_result
        self._max_in_flight = max_events_in_flight
        self._max_bytes = max_backlog_bytes
        self._held: deque[str | bytes] = deque()
        self._held_bytes = 0
        self._reader: asyncio.Task[None] | None = None
        self._closed: Exception | None = None
        self._arrived = asyncio.Event()
        self._counters = counters or _Counters()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ws, name)

    async def receive(self) -> str | bytes:
        """The next event frame, once there is room to handle it."""
        if self._reader is None:
            self._reader = asyncio.create_task(self._read(), name="onebot-frame-reader")
        while True:
            if self._held and len(self._in_flight) < self._max_in_flight:
                frame = self._held.popleft()
                self._held_bytes -= len(frame)
                if self._held:
                    # Draining a backlog: let the tasks just spawned (and the reader) run in between.
                    await asyncio.sleep(0)
                return frame
            if self._closed is not None and not self._held:
                raise self._closed
            self._arrived.clear()
            wait = _CAPACITY_POLL_SECONDS if self._held else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), wait)

    async def _read(self) -> None:
        counters = self._counters
        try:
            while True:
                data = await self._ws.receive()
                counters.frames += 1
                try:
                    parsed = json.loads(data)
                except ValueError:
                    counters.not_json += 1
                    log.warning("onebot_frame_not_json", chars=len(data), head=str(data[:80]))
                    continue
                if isinstance(parsed, dict) and "post_type" not in parsed:
                    counters.api_results += 1
                    self._deliver_result(parsed)
                    continue
                counters.events += 1
                if (journal := FrameGuard.on_event_frame) is not None:
                    journal(parsed, data)
                if repair_segments(parsed):
                    counters.repaired += 1
                    log.warning("onebot_segments_repaired", message_id=parsed.get("message_id"))
                    data = json.dumps(parsed, ensure_ascii=False)
                self._hold(data)
        except Exception as exc:  # the peer closed, or the socket broke
            self._closed = exc if isinstance(exc, WebSocketClosed) else WebSocketClosed(1006, repr(exc))
        finally:
            if self._closed is None:
                self._closed = WebSocketClosed(1006, "reader stopped")
            self._arrived.set()

    def _hold(self, frame: str | bytes) -> None:
        self._held.append(frame)
        self._held_bytes += len(frame)
        dropped = 0
        while self._held_bytes > self._max_bytes and len(self._held) > 1:
            old = self._held.popleft()
            self._held_bytes -= len(old)
            dropped += 1
        if dropped:
            self._counters.dropped += dropped
            log.warning("onebot_backlog_full", dropped=dropped, total_dropped=self._counters.dropped)
        self._counters.max_backlog = max(self._counters.max_backlog, len(self._held))
        self._arrived.set()

    @property
    def backlog(self) -> int:
        return len(self._held)

    @property
    def backlog_bytes(self) -> int:
        return self._held_bytes

    async def aclose(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        if self._held:
            log.warning("onebot_backlog_discarded", events=len(self._held))
        self._held.clear()
        self._held_bytes = 0


class GuardedAdapter(Adapter):
    """The OneBot v11 adapter with a :class:`FrameGuard` on every reverse WebSocket connection."""

    max_events_in_flight: ClassVar[int] = 256
    max_backlog_bytes: ClassVar[int] = 64 * 1024 * 1024
    _counters: ClassVar[_Counters] = _Counters()
    _guards: ClassVar[set[FrameGuard]] = set()

    # Called with every frame the adapter parses into anything but a message event (a message frame
    # it could not parse never reaches the edge: the journal settles it here).
    on_not_a_message: ClassVar[Callable[[Any], None] | None] = None

    @classmethod
    def json_to_event(cls, json_data: Any) -> Event | None:
        event = super().json_to_event(json_data)
        if not isinstance(event, MessageEvent) and (hook := cls.on_not_a_message) is not None:
            hook(json_data)
        return event

    @classmethod
    def configure(cls, *, max_events_in_flight: int, max_backlog_bytes: int) -> None:
        cls.max_events_in_flight = max_events_in_flight
        cls.max_backlog_bytes = max_backlog_bytes

    def setup_http_server(self, setup: HTTPServerSetup) -> None:
        """Not served: the adapter's HTTP event routes take events without the access token."""
        log.debug("onebot_http_route_not_served", path=str(setup.path), method=setup.method)

    def _check_access_token(self, request: Request) -> Response | None:
        """The reverse WebSocket's ``Authorization: Bearer`` against ``ONEBOT_ACCESS_TOKEN``, in
        constant time (bytes, so a token with non-ASCII characters compares instead of raising)."""
        expected = self.onebot_config.onebot_access_token
        if not expected:
            return None
        given = get_auth_bearer(request.headers.get("authorization"))
        if given is not None and hmac.compare_digest(given.encode(), expected.encode()):
            return None
        reason = "Authorization Header is invalid" if given else "Missing Authorization Header"
        log.warning("onebot_access_refused", reason=reason)
        return Response(403, content=reason)

    async def _handle_ws(self, websocket: Any) -> None:
        guard = FrameGuard(
            websocket,
            in_flight=self.tasks,
            deliver_result=self.json_to_event,
            max_events_in_flight=self.max_events_in_flight,
            max_backlog_bytes=self.max_backlog_bytes,
            counters=self._counters,
        )
        self._guards.add(guard)
        try:
            await super()._handle_ws(guard)  # type: ignore[arg-type]  # a pass-through proxy
        finally:
            self._guards.discard(guard)
            await guard.aclose()

    @classmethod
    def statistics(cls) -> FrameGuardStatistics:
        c = cls._counters
        return FrameGuardStatistics(
            frames=c.frames,
            api_results=c.api_results,
            events=c.events,
            not_json=c.not_json,
            repaired=c.repaired,
            dropped=c.dropped,
            backlog=sum(g.backlog for g in cls._guards),
            backlog_bytes=sum(g.backlog_bytes for g in cls._guards),
            max_backlog=c.max_backlog,
        )
