"""The plugin inside NoneBot: events through the adapter's own ``Bot.handle_event`` and NoneBot's
dispatch, as ``bot.py`` serves them, to the edge and to every other plugin's matchers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import anyio
import nonebot
import nonebot.message
import pytest
from nonebot.adapters.onebot.v11 import Adapter, Bot, Event, GroupMessageEvent
from nonebot.exception import IgnoredException, WebSocketClosed
from nonebot.matcher import Matcher

import plugins.greywind as plugin
from plugins.greywind.edge import Edge
from plugins.greywind.heard import RECHECK
from plugins.greywind.onebot_guard import GuardedAdapter
from tests.edge.helpers import GROUP, SELF_ID, parse
from tests.edge.test_edge import RecordingGateway, build_edge
from tests.support import onebot_events as ob


class _CountedRepr(GroupMessageEvent):
    """A group message that counts how often it is formatted whole."""

    reprs: ClassVar[int] = 0

    def __repr__(self) -> str:
        type(self).reprs += 1
        return super().__repr__()


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Bot, RecordingGateway]]:
    """A running edge as the plugin's, and a OneBot bot whose events NoneBot dispatches."""
    bot = Bot(Adapter(nonebot.get_driver()), str(SELF_ID))
    edge: Edge = build_edge(tmp_path)
    edge.bot_connected(bot.self_id, bot)
    await edge.start()
    gateway = edge.gateway
    assert isinstance(gateway, RecordingGateway)
    plugin._edge = edge
    try:
        yield bot, gateway
    finally:
        plugin._edge = None
        await edge.stop()


@pytest.fixture
def other_plugin() -> Iterator[tuple[list[Event], Any]]:
    """Another plugin's matchers, gone after the test: ``add(priority, block)`` registers one that
    records the events it runs for."""
    seen: list[Event] = []
    added: list[type[Matcher]] = []

    def add(*, priority: int, block: bool) -> None:
        matcher = nonebot.on(priority=priority, block=block)

        @matcher.handle()
        async def _record(event: Event) -> None:
            seen.append(event)

        added.append(matcher)

    try:
        yield seen, add
    finally:
        for matcher in added:
            matcher.destroy()


def said(text: str, *, user: int = 42, segments: list[ob.Segment] | None = None) -> dict[str, Any]:
    return ob.group_message(
        self_id=SELF_ID, group_id=GROUP, user_id=user, message=segments or [ob.text(text)]
    )


@pytest.mark.anyio
async def test_messages_and_notices_reach_the_edge_and_every_other_plugin(
    served: tuple[Bot, RecordingGateway], other_plugin: tuple[list[Event], Any]
) -> None:
    bot, gateway = served
    seen, add = other_plugin
    add(priority=1, block=False)
    add(priority=5, block=False)
    await bot.handle_event(parse(said("今天吃什么")))
    await bot.handle_event(parse(said("", segments=[ob.at(SELF_ID), ob.text(" 在吗")])))
    await bot.handle_event(parse(ob.group_recall(self_id=SELF_ID, group_id=GROUP, user_id=42, message_id=7)))
    edge = plugin.current_edge()
    assert edge is not None
    await edge.dispatcher.wait_idle()
    assert [(m.text, m.addressed) for m in gateway.messages] == [("今天吃什么", False), ("@灰风 在吗", True)]
    assert [type(n).__name__ for n in gateway.notices] == ["Recalled"]
    # Both matchers of the other plugin ran for all three events.
    assert [e.get_type() for e in seen].count("message") == 4
    assert [e.get_type() for e in seen].count("notice") == 2


@pytest.mark.anyio
async def test_a_plugin_that_blocks_an_event_does_not_keep_it_from_the_edge(
    served: tuple[Bot, RecordingGateway], other_plugin: tuple[list[Event], Any]
) -> None:
    """A matcher that runs first and stops propagation ends the event for the matchers after it; the
    bot still hears the message (and settles it in the journal instead of replaying it)."""
    bot, gateway = served
    seen, add = other_plugin
    add(priority=0, block=True)
    await bot.handle_event(parse(said("只有我能看到吗")))
    edge = plugin.current_edge()
    assert edge is not None
    await edge.dispatcher.wait_idle()
    assert len(seen) == 1
    assert [m.text for m in gateway.messages] == ["只有我能看到吗"]


@pytest.mark.anyio
async def test_chatter_is_heard_without_formatting_the_whole_event(
    served: tuple[Bot, RecordingGateway],
) -> None:
    """NoneBot's matcher run writes the entire event into a trace line for every event it runs for,
    whether the line is kept or not: at a few hundred messages a second that formatting alone costs
    more than reading the message. The edge hears chatter without it."""
    bot, gateway = served
    _CountedRepr.reprs = 0
    for n in range(20):
        await bot.handle_event(_CountedRepr.model_validate(said(f"第{n}句")))
    edge = plugin.current_edge()
    assert edge is not None
    await edge.dispatcher.wait_idle()
    assert len(gateway.messages) == 20
    assert _CountedRepr.reprs == 0


class _Socket:
    """A reverse WebSocket as the adapter's loop sees it: frames the test feeds, a close to end it."""

    def __init__(self) -> None:
        self.request = SimpleNamespace(headers={"x-self-id": str(SELF_ID)})
        self.frames: asyncio.Queue[str | None] = asyncio.Queue()

    async def accept(self) -> None:
        pass

    async def close(self, *_: object) -> None:
        pass

    async def receive(self) -> str:
        frame = await self.frames.get()
        if frame is None:
            raise WebSocketClosed(1000)
        return frame


@pytest.mark.anyio
async def test_a_backlog_worked_off_at_once_keeps_the_pace_its_messages_came_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While every handler is busy, messages wait as frames; handled together later, each is still
    dated when it arrived. Dated when handled, three messages 20 s apart would reach attention
    as a burst within a second: a lively chat it never was."""
    now = [1_000.0]
    edge = build_edge(tmp_path, clock=lambda: now[0])
    adapter = GuardedAdapter(nonebot.get_driver())
    # The adapter's own receive loop runs; only the driver's connect hooks, which need a server's
    # lifespan, are left out.
    monkeypatch.setattr(adapter, "bot_connect", lambda bot: None)
    monkeypatch.setattr(adapter, "bot_disconnect", lambda bot: None)
    busy = object()  # stands for a handler that has not finished
    adapter.tasks.add(busy)  # type: ignore[arg-type]
    limit = GuardedAdapter.max_events_in_flight
    GuardedAdapter.max_events_in_flight = 1
    socket = _Socket()
    await edge.start()
    plugin._edge = edge
    gateway = edge.gateway
    assert isinstance(gateway, RecordingGateway)
    try:
        loop = asyncio.create_task(adapter._handle_ws(socket))
        for n in range(3):
            socket.frames.put_nowait(json.dumps({**said(f"第{n}句"), "message_id": 70 + n}))
            await asyncio.sleep(0.05)  # the guard reads it (and holds it: the one handler is busy)
            now[0] += 20.0
        assert gateway.messages == []
        # The runtime's clock is how far the bot has heard: the oldest waiting frame's arrival.
        assert edge.context.clock() == 1_000.0
        adapter.tasks.discard(busy)  # type: ignore[arg-type]
        with anyio.fail_after(5):
            while len(gateway.messages) < 3:
                await edge.dispatcher.wait_idle()
                await asyncio.sleep(0.01)
        assert [(m.text, m.time) for m in gateway.messages] == [
            ("第0句", 1_000.0),
            ("第1句", 1_020.0),
            ("第2句", 1_040.0),
        ]
        await asyncio.sleep(RECHECK)
        assert edge.context.clock() == now[0] == 1_060.0, "nothing waits: the clock"
        # A message handed to the edge outside a guarded connection is dated when it is handled.
        await Bot(adapter, str(SELF_ID)).handle_event(parse({**said("直接"), "message_id": 99}))
        await edge.dispatcher.wait_idle()
        assert gateway.messages[-1].time == now[0] == 1_060.0
        socket.frames.put_nowait(None)
        await asyncio.wait_for(loop, 5)
    finally:
        GuardedAdapter.max_events_in_flight = limit
        plugin._edge = None
        await edge.stop()


@pytest.mark.anyio
async def test_a_plugin_that_ignores_every_event_does_not_keep_it_from_the_edge(
    served: tuple[Bot, RecordingGateway], other_plugin: tuple[list[Event], Any]
) -> None:
    """Another plugin's preprocessor that ignores events (a block list, say) ends them for NoneBot's
    matchers; the edge has heard each one whole before NoneBot runs any preprocessor."""
    bot, gateway = served
    seen, add = other_plugin
    add(priority=1, block=False)

    async def ignore_everything() -> None:
        raise IgnoredException("blocked")

    registered = set(nonebot.message._event_preprocessors)
    nonebot.message.event_preprocessor(ignore_everything)
    try:
        await bot.handle_event(parse(said("今天吃什么")))
        await bot.handle_event(parse(said("", segments=[ob.at(SELF_ID), ob.text(" 在吗")])))
    finally:
        nonebot.message._event_preprocessors.intersection_update(registered)
    edge = plugin.current_edge()
    assert edge is not None
    await edge.dispatcher.wait_idle()
    assert [m.text for m in gateway.messages] == ["今天吃什么", "@灰风 在吗"]
    assert seen == []  # NoneBot ignored both, as the other plugin asked
