"""The OneBot v11 adapter with a guard in front of its WebSocket receive loop.

The stock adapter reads a frame, parses it and spawns a task to handle it, without limit, and closes
the connection on the first frame that is not JSON. Under a flood faster than NoneBot can handle
(about a thousand events per second on one core) every waiting event holds a parsed model, a task
and its coroutine, and memory grows without bound; a single garbled frame cuts the bot off.

:class:`GuardedAdapter` puts a :class:`FrameGuard` between the socket and that loop:

* a reader (one per connection) takes every frame as it arrives. API results (frames without
  ``post_type``) are handed to the adapter at once, so calls waiting on them never stall behind
  events. Frames that are not JSON, or nest deeper than :data:`MAX_NESTING` (the JSON parser's own
  recursion limit, or the adapter's, would otherwise end the connection), are logged and skipped.
  A text segment without text is repaired (the adapter would fail on it and lose the message).
* Events wait as raw frames in two lanes (:mod:`plugins.greywind.frame_lanes`): the priority lane
  holds what asks for the bot (private messages, an @ of it, replies, commands, pokes, its name),
  served round-robin across chats; the other holds chatter, in order. Priority frames go first, and
  reach the adapter's loop while fewer than twice ``max_events_in_flight`` events are being handled
  (chatter only while fewer than ``max_events_in_flight``), so handlers stuck on a flood never hold
  back an @. The raw frames waiting are capped at ``max_backlog_bytes``; past it the oldest chatter
  is dropped, and priority frames (the loudest chat's oldest first) only when no chatter is left.
  Drops are counted and logged in one summary line at most every :data:`DROP_LOG_INTERVAL` seconds
  (and once more when the backlog has drained).
  At a rate NoneBot can handle nothing waits and nothing is dropped; under a sustained flood memory
  stays bounded.
* Each frame is stamped with the time the reader took it off the socket, and handed to the adapter's
  loop with that time in :data:`frame_received_at`; the edge dates the message by it, so a backlog
  worked off in a burst keeps the pace the chat had (it does not look like a lively chat). The
  oldest waiting frame's time (:meth:`GuardedAdapter.oldest_waiting`) is part of how far the bot has
  heard: the runtime's clock (:mod:`plugins.greywind.heard`).
* While addressed work is on its way to the model (:mod:`runtime.urgency`: a forced episode building
  its context, a dozen store calls), chatter reaches NoneBot at most once per :data:`YIELD_GAP`: the
  process, the store and the GIL are the @'s, and the chatter backlog still moves.

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
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import structlog
from nonebot.adapters.onebot.utils import get_auth_bearer
from nonebot.adapters.onebot.v11 import Adapter, Event, MessageEvent
from nonebot.drivers import HTTPServerSetup, Request, Response
from nonebot.exception import WebSocketClosed

from plugins.greywind.frame_lanes import (
    ChatterFrames,
    FairFrames,
    LaneRules,
    chat_key,
    from_self,
    is_priority,
    nested_deeper_than,
)
from runtime import stages
from runtime.urgency import AddressedWork

__all__ = [
    "FrameGuard",
    "FrameGuardStatistics",
    "GuardedAdapter",
    "HeldFrame",
    "frame_received_at",
    "repair_segments",
]

log = structlog.get_logger("greywind.onebot")

# While events wait for room, the guard looks again this often (only under overload).
_CAPACITY_POLL_SECONDS = 0.002
# Deeper frames are skipped: no OneBot event nests like that, and parsing one again (the adapter
# does) or printing it in an error line would hit Python's recursion limit.
MAX_NESTING = 64
# While addressed work is on its way to the model, chatter reaches NoneBot at most once per this many
# seconds: the @ gets the process, the chatter backlog keeps moving.
YIELD_GAP = 0.01
# Under a flood the backlog drops frames by the thousand: one summary line at most this often.
DROP_LOG_INTERVAL = 10.0

# When the frame being handled was read off the socket. :meth:`FrameGuard.receive` sets it in the
# adapter's receive loop just before the loop spawns the frame's handler task, and a task starts with
# a copy of its creator's context: each handler sees its own frame's time. None outside a guarded
# connection's handlers (the edge then dates by its clock).
frame_received_at: ContextVar[float | None] = ContextVar("frame_received_at", default=None)


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
    not_json: int  # frames skipped: not JSON, or nested deeper than MAX_NESTING
    repaired: int
    dropped: int  # events dropped because the backlog was full (priority ones included)
    backlog: int  # events waiting now (both lanes)
    backlog_bytes: int
    max_backlog: int
    priority: int = 0  # events that took the priority lane
    dropped_priority: int = 0
    backlog_priority: int = 0  # priority events waiting now


class _Counters:
    __slots__ = (
        "api_results",
        "dropped",
        "dropped_priority",
        "events",
        "frames",
        "max_backlog",
        "not_json",
        "priority",
        "repaired",
    )

    def __init__(self) -> None:
        self.frames = self.api_results = self.events = self.not_json = 0
        self.repaired = self.dropped = self.max_backlog = 0
        self.priority = self.dropped_priority = 0


class _DropReport:
    """Drops summed into one log line per :data:`DROP_LOG_INTERVAL` (the first one at once)."""

    __slots__ = ("_chatter", "_logged_at", "_priority")

    def __init__(self) -> None:
        self._chatter = self._priority = 0
        self._logged_at: float | None = None

    def add(self, chatter: int, priority: int, counters: _Counters) -> None:
        self._chatter += chatter
        self._priority += priority
        now = time.monotonic()
        if self._logged_at is None or now - self._logged_at >= DROP_LOG_INTERVAL:
            self.flush(counters, now)

    def flush(self, counters: _Counters, now: float | None = None) -> None:
        if not (self._chatter or self._priority):
            return
        log.warning(
            "onebot_backlog_full",
            dropped=self._chatter + self._priority,
            dropped_priority=self._priority,
            total_dropped=counters.dropped,
            detail=f"events dropped since the last line (at most one line per {DROP_LOG_INTERVAL:g}s)",
        )
        self._chatter = self._priority = 0
        self._logged_at = time.monotonic() if now is None else now


class HeldFrame:
    """An event frame waiting in a lane: its raw data and when the reader took it off the socket.
    Its length is the data's (what the backlog's byte cap counts)."""

    __slots__ = ("data", "received_at")

    def __init__(self, data: str | bytes, received_at: float) -> None:
        self.data = data
        self.received_at = received_at

    def __len__(self) -> int:
        return len(self.data)


class FrameGuard:
    """Wraps the driver's WebSocket for the adapter's receive loop; everything else passes through."""

    # Called with every event frame the moment it is read (parsed, and as received): the edge's
    # inbound journal. It must not raise.
    on_event_frame: ClassVar[Callable[[Any, str | bytes], None] | None] = None
    # Called with every report of the bot's own message (parsed) and when it was read, the moment it
    # is read: the outbound, which must not wait for NoneBot to hand it over. It must not raise.
    on_own_message: ClassVar[Callable[[dict[str, Any], float], None] | None] = None
    # What frames are stamped with on arrival: the edge's clock, once it has started.
    clock: ClassVar[Callable[[], float]] = time.time

    def __init__(
        self,
        ws: Any,
        *,
        in_flight: Any,  # a sized collection of the events being handled (the adapter's task set)
        deliver_result: Any,  # hands a parsed API result to the adapter
        max_events_in_flight: int,
        max_backlog_bytes: int,
        lanes: LaneRules | None = None,
        addressed: AddressedWork | None = None,
        counters: _Counters | None = None,
    ) -> None:
        self._ws = ws
        self._in_flight = in_flight
        self._deliver_result = deliver_result
        self._max_in_flight = max_events_in_flight
        # Priority events may be handled beside this many more (the chatter's handlers may be stuck).
        self._max_in_flight_priority = 2 * max_events_in_flight
        self._max_bytes = max_backlog_bytes
        self.lanes = lanes or LaneRules()
        self._addressed = addressed
        self._chatter_at = 0.0  # when chatter was last handed out
        self._held: ChatterFrames[HeldFrame] = ChatterFrames()  # chatter, in order
        self._urgent: FairFrames[HeldFrame] = FairFrames()  # the priority lane
        self._reader: asyncio.Task[None] | None = None
        self._closed: Exception | None = None
        self._arrived = asyncio.Event()
        self._counters = counters or _Counters()
        self._drops = _DropReport()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ws, name)

    async def receive(self) -> str | bytes:
        """The next event frame, once there is room to handle it: priority frames first."""
        if self._reader is None:
            self._reader = asyncio.create_task(self._read(), name="onebot-frame-reader")
        while True:
            held = self._next_frame()
            if held is not None:
                if self._held or self._urgent:
                    # Draining a backlog: let the tasks just spawned (and the reader) run in between.
                    await asyncio.sleep(0)
                else:
                    self._drops.flush(self._counters)  # the flood is over: what it cost, now
                frame_received_at.set(held.received_at)  # for the task the loop spawns next
                return held.data
            if self._closed is not None and not self._held and not self._urgent:
                raise self._closed
            self._arrived.clear()
            wait = _CAPACITY_POLL_SECONDS if self._held or self._urgent else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), wait)

    def _next_frame(self) -> HeldFrame | None:
        busy = len(self._in_flight)
        if self._urgent and busy < self._max_in_flight_priority:
            held = self._urgent.pop()
            if stages.ENABLED:
                stages.stamp(json.loads(held.data).get("message_id"), "guard.out")
            return held
        if self._held and busy < self._max_in_flight:
            if self._addressed is not None and self._addressed.pending():
                now = time.monotonic()
                if now - self._chatter_at < YIELD_GAP:
                    return None
                self._chatter_at = now
            return self._held.pop()
        return None

    async def _read(self) -> None:
        counters = self._counters
        try:
            while True:
                data = await self._ws.receive()
                received_at = FrameGuard.clock()
                counters.frames += 1
                try:
                    parsed = json.loads(data)
                except (ValueError, RecursionError) as exc:
                    self._skip(data, "not JSON" if isinstance(exc, ValueError) else "nested too deep")
                    continue
                if nested_deeper_than(data, parsed, MAX_NESTING):
                    self._skip(data, f"nested deeper than {MAX_NESTING}")
                    continue
                if isinstance(parsed, dict) and "post_type" not in parsed:
                    counters.api_results += 1
                    self._deliver_result(parsed)
                    continue
                counters.events += 1
                if (journal := FrameGuard.on_event_frame) is not None:
                    journal(parsed, data)
                own = FrameGuard.on_own_message
                if own is not None and isinstance(parsed, dict) and from_self(parsed):
                    own(parsed, received_at)
                if repair_segments(parsed):
                    counters.repaired += 1
                    log.warning("onebot_segments_repaired", message_id=parsed.get("message_id"))
                    data = json.dumps(parsed, ensure_ascii=False)
                self._hold(HeldFrame(data, received_at), parsed)
        except Exception as exc:  # the peer closed, or the socket broke
            self._closed = exc if isinstance(exc, WebSocketClosed) else WebSocketClosed(1006, repr(exc))
        finally:
            if self._closed is None:
                self._closed = WebSocketClosed(1006, "reader stopped")
            self._arrived.set()

    def _skip(self, data: str | bytes, reason: str) -> None:
        self._counters.not_json += 1
        log.warning("onebot_frame_not_json", reason=reason, chars=len(data), head=str(data[:80]))

    def _hold(self, frame: HeldFrame, event: object) -> None:
        """Queue one event frame in its lane; past the byte cap, drop chatter first."""
        counters = self._counters
        chat = chat_key(event) if isinstance(event, dict) else ""
        if isinstance(event, dict) and is_priority(event, self.lanes):
            counters.priority += 1
            stages.stamp(event.get("message_id"), "guard.held")
            for earlier in self._held.take_chat(chat):  # the chat's own order holds
                self._urgent.push(chat, earlier)
            self._urgent.push(chat, frame)
        else:
            self._held.push(chat, frame)
        dropped = dropped_priority = 0
        while self._held.bytes + self._urgent.bytes > self._max_bytes:
            if len(self._held) > 1 or (self._held and self._urgent):
                self._held.pop()
                dropped += 1
            elif len(self._urgent) > 1:
                self._urgent.drop_one()
                dropped_priority += 1
            else:
                break
        if dropped or dropped_priority:
            counters.dropped += dropped + dropped_priority
            counters.dropped_priority += dropped_priority
            self._drops.add(dropped, dropped_priority, counters)
        counters.max_backlog = max(counters.max_backlog, len(self._held) + len(self._urgent))
        self._arrived.set()

    @property
    def backlog(self) -> int:
        return len(self._held) + len(self._urgent)

    def oldest_waiting(self) -> float | None:
        """When the oldest frame still waiting here was read (None: none waits): a look at each
        waiting chat's first frame, at most every ``heard.RECHECK`` seconds."""
        return min(
            (held.received_at for lane in (self._held, self._urgent) for held in lane.heads()), default=None
        )

    @property
    def backlog_priority(self) -> int:
        return len(self._urgent)

    @property
    def backlog_bytes(self) -> int:
        return self._held.bytes + self._urgent.bytes

    async def aclose(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        self._drops.flush(self._counters)
        if self._held or self._urgent:
            log.warning("onebot_backlog_discarded", events=self.backlog, priority=self.backlog_priority)
        self._held.clear()
        self._urgent.clear()


class GuardedAdapter(Adapter):
    """The OneBot v11 adapter with a :class:`FrameGuard` on every reverse WebSocket connection."""

    max_events_in_flight: ClassVar[int] = 256
    max_backlog_bytes: ClassVar[int] = 64 * 1024 * 1024
    lanes: ClassVar[LaneRules] = LaneRules()
    addressed: ClassVar[AddressedWork | None] = None  # the edge's, once it has started
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
    def configure(
        cls, *, max_events_in_flight: int, max_backlog_bytes: int, lanes: LaneRules | None = None
    ) -> None:
        cls.max_events_in_flight = max_events_in_flight
        cls.max_backlog_bytes = max_backlog_bytes
        if lanes is not None:
            cls.lanes = lanes

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
            lanes=self.lanes,
            addressed=self.addressed,
            counters=self._counters,
        )
        self._guards.add(guard)
        try:
            await super()._handle_ws(guard)  # type: ignore[arg-type]  # a pass-through proxy
        finally:
            self._guards.discard(guard)
            await guard.aclose()

    @classmethod
    def address_by(cls, names: tuple[str, ...]) -> None:
        """Frames opening with these take the priority lane from now on (the persona was reloaded)."""
        cls._use_lanes(replace(cls.lanes, names=names))

    @classmethod
    def know_own_messages(cls, is_own: Callable[[str], bool]) -> None:
        """A reply to a message ``is_own`` says is the bot's takes the priority lane from now on."""
        cls._use_lanes(replace(cls.lanes, own_message=is_own))

    @classmethod
    def _use_lanes(cls, lanes: LaneRules) -> None:
        cls.lanes = lanes
        for guard in cls._guards:
            guard.lanes = lanes

    @classmethod
    def oldest_waiting(cls) -> float | None:
        """When the oldest event frame still waiting on any connection was read (None: none waits)."""
        return min((at for guard in cls._guards if (at := guard.oldest_waiting()) is not None), default=None)

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
            priority=c.priority,
            dropped_priority=c.dropped_priority,
            backlog_priority=sum(g.backlog_priority for g in cls._guards),
        )
