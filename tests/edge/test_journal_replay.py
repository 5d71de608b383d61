"""The edge replays the inbound journal at start: skips what is stored, answers only what is young."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from nonebot.adapters.onebot.v11 import MessageEvent

from plugins.greywind.edge import Edge
from plugins.greywind.gateway import EdgeContext
from plugins.greywind.journal import JOURNAL_DIR, InboundJournal
from plugins.greywind.onebot_guard import FrameGuard, GuardedAdapter
from plugins.greywind.own_messages import hear_sent_messages
from runtime.config import parse_config
from runtime.kernel.message import ChatMessage
from runtime.ports import NotTakenError
from tests.edge.helpers import SELF_ID, FakeBot, as_adapter_delivers
from tests.edge.test_edge import ADMIN, MODEL_ENV, RecordingGateway
from tests.support import onebot_events as ob

pytestmark = pytest.mark.anyio

GROUP_A, GROUP_B = 501, 502


# The fake stores, by data directory: a restarted edge finds what the one before it stored.
_STORES: dict[Path, set[tuple[str, str, str, str]]] = {}


class StoringGateway(RecordingGateway):
    """A gateway with a store: what it was handed is committed at once; ``stored`` is in the store."""

    def __init__(self, edge: EdgeContext) -> None:
        super().__init__(edge)
        self.stored = _STORES.setdefault(edge.data_dir, set())
        self.handed = 0
        self.wanted = 0
        self.enough = anyio.Event()

    async def on_message(self, message: ChatMessage) -> None:
        await super().on_message(message)
        self.handed += 1
        self.stored.add((message.chat_id, message.message_id, message.sender_id, message.text))
        if len(self.messages) >= self.wanted:
            self.enough.set()

    async def wait_for(self, count: int) -> None:
        self.wanted, self.enough = count, anyio.Event()
        if len(self.messages) < count:
            await self.enough.wait()

    def store_progress(self) -> tuple[int, int]:
        return self.handed, self.handed

    async def stored_already(self, messages: list[ChatMessage]) -> list[bool]:
        return [(m.chat_id, m.message_id, m.sender_id, m.text) in self.stored for m in messages]


def build(tmp_path: Path) -> Edge:
    config = parse_config({"bot": {"replay_answer_minutes": 10}, "outbound": {"max_per_minute": 600}})
    return Edge(
        config,
        config_path=tmp_path / "greywind.toml",
        data_dir=tmp_path / "data",
        superusers=[str(ADMIN)],
        env=MODEL_ENV,
        factory=StoringGateway,
    )


def message(n: int, *segments: ob.Segment | str, group: int = GROUP_B, user: int = 7) -> dict[str, Any]:
    parts = [ob.text(s) if isinstance(s, str) else s for s in segments]
    return ob.group_message(self_id=SELF_ID, group_id=group, user_id=user, message_id=n, message=parts)


def journal_of(tmp_path: Path, frames: list[tuple[float, dict[str, Any]]]) -> None:
    """What a killed run left: ``frames`` journaled at the given ages (seconds before now)."""
    stamps = iter(time.time() - age for age, _ in frames)
    journal = InboundJournal(tmp_path / "data" / JOURNAL_DIR, clock=lambda: next(stamps))
    journal.open()
    for _, payload in frames:
        journal.append(payload, json.dumps(payload, ensure_ascii=False))
    journal.close()


def read_live(payload: dict[str, Any]) -> None:
    """The guard reads ``payload`` off the socket: the edge journals it."""
    hook = FrameGuard.on_event_frame
    assert hook is not None
    hook(payload, json.dumps(payload, ensure_ascii=False))


async def delivered_at_next_start(tmp_path: Path) -> list[str]:
    """The ids of the messages a fresh edge over the same data directory delivers from the journal."""
    again = build(tmp_path)
    await again.start()
    try:
        await again.dispatcher.wait_idle()
        gateway = again.gateway
        assert isinstance(gateway, StoringGateway)
        return [m.message_id for m in gateway.messages]
    finally:
        await again.stop()


def texts(gateway: StoringGateway) -> list[tuple[str, bool]]:
    return [(m.message_id, m.addressed) for m in gateway.messages]


async def test_replay_skips_what_is_stored_and_holds_young_addressed_messages_for_the_account(
    tmp_path: Path,
) -> None:
    stored = message(1, "已经入库的")
    journal_of(
        tmp_path,
        [
            (30, stored),
            (20, message(2, "还没入库的闲聊")),
            (20, message(2, "还没入库的闲聊")),  # delivered twice by the platform
            (3600, message(3, ob.at(SELF_ID), " 一小时前问的")),  # too old to answer
            (5, message(4, ob.at(SELF_ID), " 刚才问的", group=GROUP_A)),
            (4, message(5, "在它后面的闲聊", group=GROUP_A)),
            (3, message(6, "/status", user=ADMIN)),  # a command is for its moment
            (2, {"post_type": "message", "message_type": "group", "self_id": SELF_ID, "message_id": 9}),
        ],
    )
    edge = build(tmp_path)
    gateway = edge.gateway
    assert isinstance(gateway, StoringGateway)
    gateway.stored.add((f"qq:{SELF_ID}:group:502", "1", "7", "已经入库的"))
    await edge.start()
    try:
        await edge.dispatcher.wait_idle()
        # Stored at start, before any account is connected: the chatter, the old question unaddressed.
        assert texts(gateway) == [("2", False), ("3", False)]
        assert edge.replay.statistics().waiting == 2
        bot = FakeBot()
        edge.bot_connected(str(SELF_ID), bot)
        with anyio.fail_after(5):
            await gateway.wait_for(4)
        await edge.dispatcher.wait_idle()
        assert texts(gateway)[2:] == [("4", True), ("5", False)]  # answered once it can be, in order
        stats = edge.replay.statistics()
        assert (stats.already_stored, stats.commands, stats.unreadable) == (2, 1, 1)
        assert bot.calls == []  # the command was not run
    finally:
        await edge.stop()
    # Everything was settled and committed: the clean stop leaves an empty journal.
    assert list((tmp_path / "data" / JOURNAL_DIR).iterdir()) == []


async def test_frames_read_live_are_journaled_and_settled_once_handed_over(tmp_path: Path) -> None:
    edge = build(tmp_path)
    edge.bot_connected(str(SELF_ID), FakeBot())
    await edge.start()
    try:
        payloads = [message(n, f"第{n}条") for n in range(10, 15)]
        for payload in payloads:
            read_live(payload)
        journal = edge.journal
        assert journal is not None
        assert journal.statistics().unsettled == 5
        # A message frame the adapter cannot parse never reaches the edge: settled as it fails.
        garbled = {"post_type": "message", "message_type": "group", "self_id": SELF_ID, "message_id": 99}
        read_live(garbled)
        assert journal.statistics().unsettled == 6
        assert not isinstance(GuardedAdapter.json_to_event(dict(garbled)), MessageEvent)
        assert journal.statistics().unsettled == 5
        for payload in payloads[:3]:
            await edge.handle_message(await as_adapter_delivers(payload))
        await edge.dispatcher.wait_idle()
        assert journal.statistics().unsettled == 2
        assert "入站日志 未入库 2 条" in edge.status_text()
    finally:
        await edge.stop()
    assert FrameGuard.on_event_frame is None
    assert GuardedAdapter.on_not_a_message is None
    # The two never handled (a kill, a drop) are kept for the next start, which delivers them.
    assert await delivered_at_next_start(tmp_path) == ["13", "14"]


async def test_the_bots_own_message_reported_back_is_heard_but_settles_no_journaled_frame(
    tmp_path: Path,
) -> None:
    """A ``message_sent`` report is not journaled: it must not settle the journaled echo that has its id."""
    hear_sent_messages()
    edge = build(tmp_path)
    edge.bot_connected(str(SELF_ID), FakeBot())
    await edge.start()
    try:
        echo = message(20, "好", user=SELF_ID)
        read_live(echo)
        journal = edge.journal
        assert journal is not None
        assert journal.statistics().unsettled == 1
        await edge.handle_message(await as_adapter_delivers({**echo, "post_type": "message_sent"}))
        await edge.dispatcher.wait_idle()
        assert edge.outbound.is_own_message("20"), "the report was heard as the bot's own message"
        assert journal.statistics().unsettled == 1, "the journaled echo is still waiting for its turn"
        await edge.handle_message(await as_adapter_delivers(echo))
        await edge.dispatcher.wait_idle()
        assert journal.statistics().unsettled == 0
    finally:
        await edge.stop()


class StoppedGateway(StoringGateway):
    """A runtime that has stopped: it takes no message."""

    async def on_message(self, message: ChatMessage) -> None:
        raise NotTakenError("the runtime is not running")


async def test_a_message_the_stopped_runtime_did_not_take_is_kept_for_the_next_start(tmp_path: Path) -> None:
    edge = build(tmp_path)
    edge.gateway = StoppedGateway(edge.context)  # the runtime stopped while these waited their turn
    edge.bot_connected(str(SELF_ID), FakeBot())
    await edge.start()
    try:
        for payload in [message(n, f"第{n}条") for n in range(30, 33)]:
            read_live(payload)
            await edge.handle_message(await as_adapter_delivers(payload))
        await edge.dispatcher.wait_idle()
        journal = edge.journal
        assert journal is not None
        assert journal.statistics().unsettled == 3
        assert edge.statistics().dropped_at_shutdown == 3
        assert edge.dispatcher.statistics().failed == 0, "not a failure: the message waits for the next start"
    finally:
        await edge.stop()
    assert await delivered_at_next_start(tmp_path) == ["30", "31", "32"]


async def test_a_failing_journal_is_shown_in_status_and_messages_still_flow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plugins.greywind import journal as journal_module

    edge = build(tmp_path)
    edge.bot_connected(str(SELF_ID), FakeBot())
    await edge.start()
    try:

        def full(fd: int, data: bytes) -> int:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(journal_module.os, "write", full)
        payload = message(20, "磁盘满了也要收到")
        read_live(payload)
        await edge.handle_message(await as_adapter_delivers(payload))
        await edge.dispatcher.wait_idle()
        gateway = edge.gateway
        assert isinstance(gateway, StoringGateway)
        assert [m.message_id for m in gateway.messages] == ["20"]
        assert "写失败 1（OSError: [Errno 28] No space left on device）" in edge.status_text()
    finally:
        await edge.stop()
