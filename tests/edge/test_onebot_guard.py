"""The frame guard in front of the adapter's receive loop: results first, events bounded, junk skipped."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from nonebot.exception import WebSocketClosed

from plugins.greywind.frame_lanes import is_priority
from plugins.greywind.onebot_guard import (
    YIELD_GAP,
    FrameGuard,
    GuardedAdapter,
    frame_received_at,
    repair_segments,
)
from runtime.urgency import AddressedWork, addressed
from tests.support import onebot_events as ob


class FakeSocket:
    """Frames queued by the test; ``close()`` makes the next receive raise like the driver does."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self.request = "the request"

    def feed(self, *frames: str | bytes) -> None:
        for frame in frames:
            self.frames.put_nowait(frame)

    def close(self) -> None:
        self.frames.put_nowait(None)

    async def receive(self) -> str | bytes:
        frame = await self.frames.get()
        if frame is None:
            raise WebSocketClosed(1000)
        return frame


def event(n: int) -> str:
    return json.dumps(
        ob.group_message(self_id=1, group_id=2, user_id=3, message=[ob.text(f"m{n}")], message_id=n)
    )


def make(
    ws: FakeSocket, in_flight: set[Any], results: list[Any], *, limit: int = 4, max_bytes: int = 10**6
) -> FrameGuard:
    return FrameGuard(
        ws,
        in_flight=in_flight,
        deliver_result=results.append,
        max_events_in_flight=limit,
        max_backlog_bytes=max_bytes,
    )


@pytest.mark.anyio
async def test_events_come_through_in_order_and_results_go_straight_to_the_adapter() -> None:
    ws, results = FakeSocket(), []
    guard = make(ws, set(), results)
    ws.feed(event(1), json.dumps({"status": "ok", "retcode": 0, "data": {}, "echo": "7"}), event(2))
    first = await guard.receive()
    second = await guard.receive()
    assert [json.loads(first)["message_id"], json.loads(second)["message_id"]] == [1, 2]
    assert results == [{"status": "ok", "retcode": 0, "data": {}, "echo": "7"}]
    assert guard.request == "the request", "everything else passes through to the socket"
    await guard.aclose()


@pytest.mark.anyio
async def test_an_at_goes_first_but_never_ahead_of_its_own_chats_earlier_messages() -> None:
    ws = FakeSocket()
    in_flight: set[Any] = {object()}
    guard = make(ws, in_flight, [], limit=1)

    def say(group: int, n: int, *segments: ob.Segment) -> str:
        message = list(segments) or [ob.text(f"m{n}")]
        return json.dumps(
            ob.group_message(self_id=1, group_id=group, user_id=3, message=message, message_id=n)
        )

    in_flight.add(object())  # priority frames may take twice the limit: this holds them too
    ws.feed(say(7, 1), say(2, 2), say(2, 3), say(7, 4), say(2, 5, ob.at(1), ob.text(" 在吗")), say(2, 6))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(guard.receive(), 0.05)  # all six wait: the one handler is busy
    in_flight.clear()
    order = [json.loads(await guard.receive())["message_id"] for _ in range(6)]
    # Group 2's @ (5) goes first, with what group 2 said before it; other chats keep their order.
    assert order == [2, 3, 5, 1, 4, 6]
    await guard.aclose()


@pytest.mark.anyio
async def test_frames_that_are_not_json_are_skipped_not_fatal() -> None:
    ws = FakeSocket()
    guard = make(ws, set(), [])
    ws.feed("not json {", b"\x00\xff", event(3))
    assert json.loads(await guard.receive())["message_id"] == 3
    await guard.aclose()


@pytest.mark.anyio
async def test_events_wait_while_too_many_are_in_flight_but_results_still_arrive() -> None:
    ws, results = FakeSocket(), []
    in_flight: set[Any] = {object(), object()}
    guard = make(ws, in_flight, results, limit=2)
    ws.feed(event(4), json.dumps({"status": "ok", "retcode": 0, "data": None, "echo": "9"}))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(guard.receive(), 0.05)
    assert len(results) == 1, "an API result is delivered even while events wait"
    assert guard.backlog == 1
    in_flight.pop()
    assert json.loads(await asyncio.wait_for(guard.receive(), 1))["message_id"] == 4
    await guard.aclose()


@pytest.mark.anyio
async def test_a_full_backlog_drops_the_oldest_events() -> None:
    ws = FakeSocket()
    in_flight: set[Any] = {object()}
    size = len(event(10))
    guard = make(ws, in_flight, [], limit=1, max_bytes=size * 3)
    ws.feed(*(event(n) for n in range(10, 20)))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(guard.receive(), 0.05)
    assert guard.backlog == 3
    assert guard.backlog_bytes <= size * 3
    in_flight.clear()
    kept = [json.loads(await guard.receive())["message_id"] for _ in range(3)]
    assert kept == [17, 18, 19]
    await guard.aclose()


@pytest.mark.anyio
async def test_close_is_raised_after_the_waiting_events() -> None:
    ws = FakeSocket()
    guard = make(ws, set(), [])
    ws.feed(event(21))
    ws.close()
    assert json.loads(await guard.receive())["message_id"] == 21
    with pytest.raises(WebSocketClosed):
        await guard.receive()
    await guard.aclose()


@pytest.mark.anyio
async def test_a_text_segment_without_text_is_repaired_on_the_way_in() -> None:
    ws = FakeSocket()
    guard = make(ws, set(), [])
    broken = ob.group_message(
        self_id=1, group_id=2, user_id=3, message=[ob.segment("text"), ob.text("ok")], message_id=5
    )
    ws.feed(json.dumps(broken))
    assert json.loads(await guard.receive())["message"][0] == {"type": "text", "data": {"text": ""}}
    await guard.aclose()


def test_repair_touches_only_broken_text_segments() -> None:
    event = {
        "post_type": "message",
        "message": [{"type": "text", "data": {}}, {"type": "text"}, {"type": "at"}],
    }
    assert repair_segments(event)
    assert event["message"] == [
        {"type": "text", "data": {"text": ""}},
        {"type": "text", "data": {"text": ""}},
        {"type": "at"},
    ]
    assert not repair_segments({"message": [{"type": "text", "data": {"text": "hi"}}]})
    assert not repair_segments({"message": "[CQ:at,qq=1] string format"})
    assert not repair_segments([1, 2, 3])


def at_event(n: int, group: int = 4) -> str:
    """An @ of the bot, by default in a quiet group (``event``'s chatter is in group 2)."""
    return json.dumps(
        ob.group_message(
            self_id=1, group_id=group, user_id=3, message=[ob.at(1), ob.text("hi")], message_id=n
        )
    )


@pytest.mark.anyio
async def test_addressed_events_go_first_and_past_a_full_set_of_handlers() -> None:
    ws = FakeSocket()
    in_flight: set[Any] = {object()}
    guard = make(ws, in_flight, [], limit=1)
    private = json.dumps(ob.private_message(self_id=1, user_id=9, message=[ob.text("在吗")], message_id=100))
    ws.feed(event(1), event(2), at_event(3), private)
    first = [json.loads(await asyncio.wait_for(guard.receive(), 1))["message_id"] for _ in range(2)]
    assert first == [3, 100], "the @ and the private message go while the chatter's handler is busy"
    ws.feed(at_event(4))
    in_flight.add(object())
    with pytest.raises(TimeoutError):  # twice the limit in flight: even priority waits now
        await asyncio.wait_for(guard.receive(), 0.05)
    in_flight.pop()
    assert json.loads(await asyncio.wait_for(guard.receive(), 1))["message_id"] == 4
    in_flight.clear()
    assert [json.loads(await guard.receive())["message_id"] for _ in range(2)] == [1, 2]
    await guard.aclose()


@pytest.mark.anyio
async def test_a_full_backlog_drops_chatter_before_any_addressed_event() -> None:
    ws = FakeSocket()
    in_flight: set[Any] = {object(), object(), object()}
    size = len(event(10))
    guard = make(ws, in_flight, [], limit=1, max_bytes=size * 4)
    frames = [event(n) for n in range(10, 30)]
    frames.insert(2, at_event(99))
    ws.feed(*frames)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(guard.receive(), 0.05)
    assert guard.backlog_priority == 1
    in_flight.clear()
    kept = [json.loads(await guard.receive())["message_id"] for _ in range(guard.backlog)]
    assert kept[0] == 99, "the @ survived twenty chatter frames and goes first"
    assert kept[1:] == list(range(30 - len(kept) + 1, 30))
    await guard.aclose()


@pytest.mark.anyio
async def test_the_priority_lane_takes_chats_in_turn() -> None:
    ws = FakeSocket()
    in_flight: set[Any] = {object()} | {object() for _ in range(1)}
    guard = make(ws, in_flight, [], limit=1)
    ws.feed(*(at_event(n, group=5) for n in range(1, 5)), at_event(50, group=6))
    await asyncio.sleep(0.05)
    in_flight.clear()
    got = [json.loads(await guard.receive())["message_id"] for _ in range(5)]
    assert got == [1, 50, 2, 3, 4], "the quiet chat's @ waits behind one of the spammer's, not all"
    await guard.aclose()


@pytest.mark.anyio
async def test_frames_nested_too_deep_are_skipped_not_fatal() -> None:
    ws = FakeSocket()
    guard = make(ws, set(), [])
    ws.feed("[" * 100_000, '{"post_type": "message", "x": ' + "[" * 200 + "]" * 200 + "}", event(7))
    assert json.loads(await guard.receive())["message_id"] == 7
    await guard.aclose()


@pytest.mark.anyio
async def test_chatter_yields_while_addressed_work_is_on_its_way_to_the_model() -> None:
    ws = FakeSocket()
    work = AddressedWork()
    guard = FrameGuard(
        ws,
        in_flight=set(),
        deliver_result=[].append,
        max_events_in_flight=8,
        max_backlog_bytes=10**6,
        addressed=work,
    )
    ws.feed(*(event(n) for n in range(1, 41)))
    with addressed(work):
        started = time.monotonic()
        for _ in range(10):
            await guard.receive()
        assert time.monotonic() - started >= 9 * YIELD_GAP * 0.9, "one chatter frame per gap"
        ws.feed(at_event(99))
        await asyncio.sleep(0.01)
        assert json.loads(await asyncio.wait_for(guard.receive(), 1))["message_id"] == 99, "@s do not wait"
    started = time.monotonic()
    for _ in range(30):
        await guard.receive()
    assert time.monotonic() - started < 20 * YIELD_GAP, "without addressed work chatter flows freely"
    await guard.aclose()


def test_a_persona_reload_renames_the_priority_lane() -> None:
    before = GuardedAdapter.lanes
    named = ob.group_message(self_id=1, group_id=2, user_id=3, message=[ob.text("新名字在吗")])
    try:
        assert not is_priority(named, GuardedAdapter.lanes)
        GuardedAdapter.address_by(("新名字",))
        assert is_priority(named, GuardedAdapter.lanes)
        assert GuardedAdapter.lanes.command_prefix == before.command_prefix
    finally:
        GuardedAdapter.lanes = before


def test_a_reply_takes_the_priority_lane_once_its_target_is_known_as_the_bots() -> None:
    before = GuardedAdapter.lanes
    reply = ob.group_message(self_id=1, group_id=2, user_id=3, message=[ob.reply(77), ob.text("为什么")])
    try:
        assert not is_priority(reply, GuardedAdapter.lanes), "a reply to anyone is chatter"
        GuardedAdapter.know_own_messages(lambda message_id: message_id == "77")
        assert is_priority(reply, GuardedAdapter.lanes)
        assert GuardedAdapter.lanes.names == before.names
    finally:
        GuardedAdapter.lanes = before


@pytest.mark.anyio
async def test_each_frame_handed_out_carries_the_time_it_was_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The @ overtakes the chatter of other chats and pulls its own chat's ahead of it; every frame
    keeps its own arrival time, for the task the adapter's loop spawns right after receive()."""
    now = [100.0]
    monkeypatch.setattr(FrameGuard, "clock", lambda: now[0])
    ws = FakeSocket()
    in_flight: set[Any] = {object(), object()}  # busy: everything waits
    guard = make(ws, in_flight, [], limit=2)

    async def take() -> tuple[int, float | None]:
        frame = await guard.receive()
        return json.loads(frame)["message_id"], frame_received_at.get()

    first = asyncio.create_task(take())  # the adapter's loop waits on the guard from the start
    for frame in (event(1), at_event(2, group=9), event(3), at_event(4, group=2)):
        ws.feed(frame)
        await asyncio.sleep(0.01)
        now[0] += 10.0
    in_flight.clear()
    seen = [await first, *[await take() for _ in range(3)]]
    # Group 2's @ (4) goes first with group 2's chatter (1, 3) ahead of it, round-robin with group 9's.
    assert sorted(seen) == [(1, 100.0), (2, 110.0), (3, 120.0), (4, 130.0)]
    assert [n for n, _ in seen] != [1, 2, 3, 4], "handed out in another order than read"
    await guard.aclose()


@pytest.mark.anyio
async def test_the_oldest_waiting_frame_says_how_far_the_bot_has_heard(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(FrameGuard, "clock", lambda: now[0])
    ws = FakeSocket()
    in_flight: set[Any] = {object(), object(), object(), object()}  # busy: everything waits
    guard = make(ws, in_flight, [], limit=2)
    pending = asyncio.create_task(guard.receive())
    assert guard.oldest_waiting() is None
    for frame in (at_event(1, group=9), event(2), event(3)):
        ws.feed(frame)
        await asyncio.sleep(0.01)
        now[0] += 10.0
    assert guard.oldest_waiting() == 100.0  # the @ waits too (the priority lane is full as well)
    in_flight.clear()
    assert json.loads(await pending)["message_id"] == 1
    assert guard.oldest_waiting() == 110.0
    await guard.receive()
    await guard.receive()
    assert guard.oldest_waiting() is None
    await guard.aclose()
