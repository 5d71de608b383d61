"""The live view's feed: a slow watcher loses the oldest items and is told how many, the number of
watchers is bounded, and a chat nobody watches costs no view."""

from __future__ import annotations

import pytest

from runtime.app.why import WhyLog
from runtime.console.feed import LiveFeed, TooManyWatchers
from runtime.kernel.kernel import Kernel
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.ports import SentRecord

pytestmark = pytest.mark.asyncio


def message(n: int, group: str = "500") -> ChatMessage:
    return ChatMessage(str(n), ChatKind.GROUP, group, "42", "阿明", 1_000.0 + n, f"第{n}条")


async def test_a_slow_watcher_keeps_the_newest_items_and_hears_how_many_it_missed() -> None:
    kernel = Kernel(now=1_000.0)
    feed = LiveFeed(kernel, lambda: 1_100.0, per_client=3, max_watchers=2)
    why = WhyLog(64)
    why.subscribe(feed.on_result)
    watcher = feed.subscribe("group:500")
    for n in range(5):
        why.note(kernel.ingest(message(n)))
    why.note(kernel.ingest(message(9, group="501")))  # not watched
    feed.on_sent(SentRecord("group:500", "好的", None, 1_006.0, None, shadow=True))
    items, dropped = await watcher.take(0.01)
    assert [item.get("message_id") for item in items] == ["3", "4", None]
    assert items[-1] == {**items[-1], "kind": "reply", "shadow": True}
    assert dropped == 3
    assert feed.per_minute() == 6
    assert feed.chat_per_minute("group:501") == 1
    feed.subscribe("group:501")
    with pytest.raises(TooManyWatchers):
        feed.subscribe("group:502")
    feed.unsubscribe(watcher)
    feed.subscribe("group:502")


async def test_a_why_listener_that_raises_does_not_stop_the_others() -> None:
    kernel = Kernel(now=1_000.0)
    why = WhyLog(8)
    heard: list[str] = []

    def broken(_result: object) -> None:
        raise RuntimeError("boom")

    why.subscribe(broken)
    dispose = why.subscribe(lambda result: heard.append(result.message.message_id))
    why.note(kernel.ingest(message(1)))
    dispose()
    why.note(kernel.ingest(message(2)))
    assert heard == ["1"]
    assert why.get("group:500", "2") is not None
    assert [r.message.message_id for r in why.recent("group:500")] == ["1", "2"]
