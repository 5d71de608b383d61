"""The edge as a whole, without a server: adapter events in, gateway calls and API calls out."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import TaskGroup
from nonebot.adapters.onebot.v11 import NoticeEvent

from plugins.greywind.commands import RuntimeControl
from plugins.greywind.edge import Edge, model_is_configured
from plugins.greywind.gateway import EdgeContext, EdgeControl, LoggingGateway, RuntimeGateway
from plugins.greywind.heard import RECHECK
from plugins.greywind.notices import BotMuted, Notice
from runtime.config import parse_config
from runtime.kernel.message import ChatMessage
from tests.edge.helpers import GROUP, SELF_ID, FakeBot, as_adapter_delivers, parse
from tests.support import onebot_events as ob

MODEL_ENV = {"GREYWIND_LLM_BASE_URL": "http://127.0.0.1:1/v1", "GREYWIND_LLM_MODEL": "m"}
ADMIN = 4242


class RecordingGateway:
    """Stands where the runtime will: records what the edge hands over; can be told to fail."""

    def __init__(self, edge: EdgeContext) -> None:
        self.edge = edge
        self.messages: list[ChatMessage] = []
        self.notices: list[Notice] = []
        self.fail_on: set[str] = set()
        self.started = False
        self.stopped = False
        self._control = EdgeControl(edge)

    @property
    def control(self) -> RuntimeControl:
        return self._control

    async def start(self, task_group: TaskGroup) -> None:
        self.started = True
        self.task_group = task_group

    async def stop(self) -> None:
        self.stopped = True

    async def on_message(self, message: ChatMessage) -> None:
        if message.text in self.fail_on:
            raise RuntimeError("runtime bug")
        await anyio.lowlevel.checkpoint()
        self.messages.append(message)

    async def on_notice(self, notice: Notice) -> None:
        self.notices.append(notice)


def build_edge(
    tmp_path: Path,
    *,
    env: dict[str, str] | None = None,
    factory: Callable[[EdgeContext], RuntimeGateway] = RecordingGateway,
    clock: Callable[[], float] = time.time,
    **bot: Any,
) -> Edge:
    config = parse_config({"bot": bot, "outbound": {"max_per_minute": 600, "burst": 50}})
    return Edge(
        config,
        config_path=tmp_path / "greywind.toml",
        data_dir=tmp_path / "data",
        superusers=[str(ADMIN), "onebot:777"],
        env=MODEL_ENV if env is None else env,
        factory=factory,
        clock=clock,
    )


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[tuple[Edge, RecordingGateway, FakeBot]]:
    edge = build_edge(tmp_path)
    bot = FakeBot()
    edge.bot_connected(str(SELF_ID), bot)
    await edge.start()
    gateway = edge.gateway
    assert isinstance(gateway, RecordingGateway)
    try:
        yield edge, gateway, bot
    finally:
        await edge.stop()


async def say(edge: Edge, user: int, segments: list[ob.Segment], *, group: int = GROUP, **kw: Any) -> None:
    payload = ob.group_message(self_id=SELF_ID, group_id=group, user_id=user, message=segments, **kw)
    await edge.handle_message(await as_adapter_delivers(payload))


async def settle(edge: Edge) -> None:
    await edge.dispatcher.wait_idle()


@pytest.mark.anyio
async def test_messages_reach_the_runtime_in_order_per_chat(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    edge, gateway, _ = running
    for n in range(20):
        await say(edge, 42, [ob.text(f"a{n}")], group=1001)
        await say(edge, 43, [ob.text(f"b{n}")], group=1002)
    await settle(edge)
    assert [m.text for m in gateway.messages if m.chat_id == f"qq:{SELF_ID}:group:1001"] == [
        f"a{n}" for n in range(20)
    ]
    assert [m.text for m in gateway.messages if m.chat_id == f"qq:{SELF_ID}:group:1002"] == [
        f"b{n}" for n in range(20)
    ]
    assert gateway.started


@pytest.mark.anyio
async def test_superuser_status_is_answered_and_not_passed_on(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    edge, gateway, bot = running
    await say(edge, ADMIN, [ob.text("/status")], message_id=31)
    await say(edge, 777, [ob.at(SELF_ID), ob.text(" /status")])  # "onebot:777" in SUPERUSERS
    await settle(edge)
    assert gateway.messages == []
    assert len(bot.calls) == 2
    api, data, _ = bot.calls[0]
    assert api == "send_group_msg"
    assert data["message"][0] == {"type": "reply", "data": {"id": "31"}}
    assert "灰风在线" in bot.texts()[0]
    assert "群 1 个" in bot.texts()[0]  # the short status; every figure is behind "full"
    assert "收到消息" not in bot.texts()[0]
    await say(edge, ADMIN, [ob.text("/status full")])
    await settle(edge)
    assert "收到消息" in bot.texts()[2]


@pytest.mark.anyio
async def test_a_command_from_anyone_else_is_just_a_message(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    edge, gateway, bot = running
    await say(edge, 42, [ob.text("/status")])
    await settle(edge)
    assert [m.text for m in gateway.messages] == ["/status"]
    assert bot.calls == []


@pytest.mark.anyio
async def test_mute_word_opens_a_quiet_period_and_the_phrase_lifts_it(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    edge, gateway, bot = running
    chat = f"qq:{SELF_ID}:group:{GROUP}"
    await say(edge, 42, [ob.at(SELF_ID), ob.text(" 闭嘴")])
    await settle(edge)
    assert gateway.messages[-1].text.endswith("闭嘴")
    assert not gateway.messages[-1].addressed, "a mute request must not cost a model call"
    assert (await edge.outbound.send(chat, "我还想说")).reason == "quiet"
    # Chatter that merely contains the word, not addressed, changes nothing elsewhere.
    await say(edge, 43, [ob.text("闭嘴")], group=GROUP + 1)
    assert edge.outbound.gate(f"qq:{SELF_ID}:group:{GROUP + 1}").open
    await say(edge, 42, [ob.text("灰风说话")])
    await settle(edge)
    assert edge.outbound.gate(chat).open
    assert (await edge.outbound.send(chat, "我回来了")).sent
    assert bot.texts() == ["我回来了"]


@pytest.mark.anyio
async def test_admin_mute_and_unmute_commands_close_and_open_the_gate(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    edge, _, bot = running
    chat = f"qq:{SELF_ID}:group:{GROUP}"
    await say(edge, ADMIN, [ob.text("/mute 10m")])
    await settle(edge)
    verdict = edge.outbound.gate(chat)
    assert verdict.reason == "quiet"
    assert verdict.until is not None
    assert "10 分钟" in bot.texts()[-1]
    await say(edge, ADMIN, [ob.text("/unmute")])
    await settle(edge)
    assert edge.outbound.gate(chat).open


@pytest.mark.anyio
async def test_a_ban_notice_stops_sends_and_reaches_the_runtime(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    edge, gateway, bot = running
    event = parse(ob.group_ban(self_id=SELF_ID, group_id=GROUP, user_id=SELF_ID, duration=3600))
    assert isinstance(event, NoticeEvent)
    await edge.handle_notice(event)
    await settle(edge)
    assert isinstance(gateway.notices[0], BotMuted)
    assert (await edge.outbound.send(f"qq:{SELF_ID}:group:{GROUP}", "hello")).reason == "muted"
    assert bot.calls == []


@pytest.mark.anyio
async def test_a_poke_reaches_the_runtime_as_an_addressed_message(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    edge, gateway, _ = running
    event = parse(ob.poke(self_id=SELF_ID, user_id=42, target_id=SELF_ID, group_id=GROUP))
    assert isinstance(event, NoticeEvent)
    await edge.handle_notice(event)
    await settle(edge)
    assert [(m.text, m.addressed) for m in gateway.messages] == [("[戳一戳]", True)]


@pytest.mark.anyio
async def test_a_runtime_failure_on_one_message_does_not_stop_the_next(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    edge, gateway, _ = running
    gateway.fail_on.add("boom")
    await say(edge, 42, [ob.text("boom")])
    await say(edge, 42, [ob.text("after")])
    await settle(edge)
    assert [m.text for m in gateway.messages] == ["after"]
    assert edge.statistics().dispatcher.failed == 1


@pytest.mark.anyio
async def test_stop_lets_queued_messages_finish_then_stops_the_runtime(tmp_path: Path) -> None:
    edge = build_edge(tmp_path)
    await edge.start()
    for n in range(50):
        await say(edge, 42, [ob.text(f"m{n}")])
    await edge.stop()
    gateway = edge.gateway
    assert isinstance(gateway, RecordingGateway)
    assert len(gateway.messages) == 50
    assert gateway.stopped
    assert (tmp_path / "data").is_dir()


@pytest.mark.anyio
async def test_without_a_model_the_edge_runs_in_shadow_mode(tmp_path: Path) -> None:
    edge = build_edge(tmp_path, env={})
    assert not edge.model_configured
    assert edge.shadow_mode
    bot = FakeBot()
    edge.bot_connected(str(SELF_ID), bot)
    await edge.start()
    try:
        result = await edge.outbound.send(f"qq:{SELF_ID}:group:{GROUP}", "我不该说出口")
    finally:
        await edge.stop()
    assert result.reason == "shadow"
    assert bot.calls == []


def test_model_is_configured_by_env_pair_or_a_chat_provider() -> None:
    config = parse_config({})
    assert not model_is_configured(config, {})
    assert not model_is_configured(config, {"GREYWIND_LLM_BASE_URL": "http://x"})
    assert model_is_configured(config, MODEL_ENV)
    with_provider = parse_config(
        {"models": {"providers": [{"name": "p", "base_url": "http://x/v1", "model": "m", "roles": ["chat"]}]}}
    )
    assert model_is_configured(with_provider, {})


def test_shadow_mode_can_be_asked_for_with_a_model(tmp_path: Path) -> None:
    edge = build_edge(tmp_path, shadow_mode=True)
    assert edge.model_configured
    assert edge.shadow_mode


@pytest.mark.anyio
async def test_the_default_gateway_logs_and_answers_nothing(tmp_path: Path) -> None:
    config = parse_config({})
    edge = Edge(config, config_path=tmp_path / "c.toml", data_dir=tmp_path / "d", env={})
    assert isinstance(edge.gateway, LoggingGateway)
    bot = FakeBot()
    edge.bot_connected(str(SELF_ID), bot)
    await edge.start()
    await say(edge, 42, [ob.at(SELF_ID), ob.text(" 你好")])
    await edge.stop()
    assert edge.gateway.statistics().addressed == 1
    assert bot.calls == []
    assert "未接入" in await edge.gateway.control.why(f"qq:{SELF_ID}:group:{GROUP}", None)


@pytest.mark.anyio
async def test_a_crashing_runtime_background_task_does_not_take_the_edge_down(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    edge, gateway, _ = running

    async def scheduler_loop() -> None:
        raise RuntimeError("scheduler bug")

    gateway.task_group.start_soon(scheduler_loop, name="scheduler")
    await anyio.sleep(0.01)
    await say(edge, 42, [ob.text("still listening?")])
    await settle(edge)
    assert [m.text for m in gateway.messages] == ["still listening?"]


class StuckGateway(RecordingGateway):
    """A runtime whose message handling and shutdown never finish."""

    async def on_message(self, message: ChatMessage) -> None:
        await anyio.sleep_forever()

    async def stop(self) -> None:
        await anyio.sleep_forever()


@pytest.mark.anyio
async def test_stop_does_not_hang_on_a_stuck_runtime(tmp_path: Path) -> None:
    config = parse_config({})
    edge = Edge(
        config,
        config_path=tmp_path / "c.toml",
        data_dir=tmp_path / "d",
        env=MODEL_ENV,
        factory=StuckGateway,
        stop_grace=0.05,
    )
    await edge.start()
    await say(edge, 42, [ob.text("this one never finishes")])
    with anyio.fail_after(2):
        await edge.stop()
    assert edge.statistics().dispatcher.running == 0


@pytest.mark.anyio
async def test_a_renamed_persona_is_addressed_by_its_new_name_at_once(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    edge, gateway, _ = running
    await say(edge, 42, [ob.text("小灰 在吗")])
    await settle(edge)
    edge.context.rename(("小灰", "灰灰"))  # what `/persona reload` does through the context
    await say(edge, 42, [ob.text("小灰 在吗")])
    await say(edge, 43, [ob.text("灰灰，帮个忙")])
    await say(edge, 44, [ob.text("灰风 在吗")])
    await settle(edge)
    assert [m.addressed for m in gateway.messages] == [False, True, True, False]


@pytest.mark.anyio
async def test_a_renamed_persona_is_named_in_status_and_woken_by_its_own_name(tmp_path: Path) -> None:
    config = parse_config({"persona": {"name": "小岚"}, "outbound": {"max_per_minute": 600, "burst": 50}})
    edge = Edge(
        config,
        config_path=tmp_path / "greywind.toml",
        data_dir=tmp_path / "data",
        superusers=[str(ADMIN)],
        env=MODEL_ENV,
        factory=RecordingGateway,
    )
    bot = FakeBot()
    edge.bot_connected(str(SELF_ID), bot)
    await edge.start()
    try:
        chat = f"qq:{SELF_ID}:group:{GROUP}"
        await say(edge, ADMIN, [ob.text("/status")])
        await say(edge, 42, [ob.at(SELF_ID), ob.text(" 闭嘴")])
        await say(edge, 42, [ob.text("灰风说话")])  # the old name wakes nobody
        await settle(edge)
        assert edge.outbound.gate(chat).reason == "quiet"
        await say(edge, 42, [ob.text("小岚说话")])
        await settle(edge)
        assert edge.outbound.gate(chat).open
    finally:
        await edge.stop()
    assert bot.texts()[0].startswith("小岚在线")
    assert "灰风" not in bot.texts()[0]


def test_an_unmute_phrase_set_in_the_config_is_kept_whatever_the_name() -> None:
    assert parse_config({}).bot.unmute_phrase_for("灰风") == "灰风说话"
    assert parse_config({}).bot.unmute_phrase_for("小岚") == "小岚说话"
    assert parse_config({"bot": {"unmute_phrase": "醒醒"}}).bot.unmute_phrase_for("小岚") == "醒醒"


class _WhyControl(EdgeControl):
    def __init__(self, edge: EdgeContext) -> None:
        super().__init__(edge)
        self.asked: list[tuple[str, str | None]] = []

    async def why(self, chat_id: str, message_id: str | None) -> str:
        self.asked.append((chat_id, message_id))
        return f"消息 {message_id}"


class _WhyGateway(RecordingGateway):
    def __init__(self, edge: EdgeContext) -> None:
        super().__init__(edge)
        self.why = _WhyControl(edge)

    @property
    def control(self) -> RuntimeControl:
        return self.why


@pytest.mark.anyio
async def test_why_quoting_a_message_explains_that_message(tmp_path: Path) -> None:
    edge = build_edge(tmp_path, factory=_WhyGateway)
    bot = FakeBot()
    edge.bot_connected(str(SELF_ID), bot)
    await edge.start()
    try:
        gateway = edge.gateway
        assert isinstance(gateway, _WhyGateway)
        await say(edge, 42, [ob.text("有推荐的火锅店吗？")], message_id=77)
        await say(edge, ADMIN, [ob.reply(77), ob.text("/why")], message_id=78)
        await say(edge, ADMIN, [ob.reply(77), ob.text("/why 5")], message_id=79)  # an id given wins
        await say(edge, ADMIN, [ob.text("/why")], message_id=80)
        await settle(edge)
    finally:
        await edge.stop()
    chat = f"qq:{SELF_ID}:group:{GROUP}"
    assert gateway.why.asked == [(chat, "77"), (chat, "5"), (chat, None)]
    assert bot.texts() == ["消息 77", "消息 5", "消息 None"]


@pytest.mark.anyio
async def test_the_collector_is_tuned_while_serving_and_put_back_at_stop(tmp_path: Path) -> None:
    import gc

    from plugins.greywind.looplag import FullCollections

    before = gc.get_threshold()
    edge = build_edge(tmp_path)
    # Due after the 250 messages below (not 1.5 million), once no message came for 0.3 s.
    edge.full_collections = FullCollections(
        lambda: edge.dispatcher.submitted, due=250, ceiling=10**9, quiet=0.3, interval=0.05
    )
    await edge.start()
    try:
        assert edge.collector_tuning.applied
        assert gc.get_freeze_count() > 0
        # Start-up's own collection (before serving) is not counted as a pause of the chats.
        assert edge.collector.full == 0
        gc.collect()
        assert edge.collector.full == 1

        async def nothing() -> None:
            pass

        # A young collection per 250 messages taken, however few objects they left.
        for n in range(250):
            await edge.dispatcher.submit(f"chat-{n % 7}", nothing)
        with anyio.fail_after(5):
            while edge.young_collections.collections < 1:  # noqa: ASYNC110 - a counter, not an event
                await anyio.sleep(0.05)
        assert edge.collector.young >= 1
        assert "年轻代回收" in edge.status_text()
        # The full collection comes in the quiet after them, not by the collector's own count.
        with anyio.fail_after(5):
            while edge.full_collections.collections < 1:  # noqa: ASYNC110 - a counter, not an event
                await anyio.sleep(0.05)
        assert edge.collector.full == 2
        assert edge.full_collections.forced == 0
        assert "流量中做了 0 次" in edge.status_text()
    finally:
        await edge.stop()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


@pytest.mark.anyio
async def test_the_runtimes_clock_waits_for_messages_queued_for_their_chats_turn(tmp_path: Path) -> None:
    """A message converted and queued behind its chat's earlier one has not reached the runtime: the
    runtime's clock stays at its date until it has."""
    now = [1_000.0]
    release = anyio.Event()

    class SlowGateway(RecordingGateway):
        async def on_message(self, message: ChatMessage) -> None:
            await release.wait()
            await super().on_message(message)

    edge = build_edge(tmp_path, factory=SlowGateway, clock=lambda: now[0])
    edge.bot_connected(str(SELF_ID), FakeBot())
    await edge.start()
    try:
        await say(edge, 42, [ob.text("第一句")])  # dated 1000; the runtime is busy with it
        now[0] = 1_010.0
        await say(edge, 42, [ob.text("第二句")])  # dated 1010; waits for its chat's turn
        now[0] = 1_030.0
        await anyio.sleep(2 * RECHECK)
        assert edge.context.clock() == 1_010.0
        assert edge.context.clock_lag() == 20.0, "the runtime's alarm is told how far behind it is"
        release.set()
        await settle(edge)
        await anyio.sleep(2 * RECHECK)
        assert edge.context.clock() == 1_030.0
        assert edge.context.clock_lag() == 0.0
        gateway = edge.gateway
        assert isinstance(gateway, RecordingGateway)
        assert [(m.text, m.time) for m in gateway.messages] == [("第一句", 1_000.0), ("第二句", 1_010.0)]
    finally:
        await edge.stop()


@pytest.mark.anyio
async def test_a_reply_to_the_bots_echoed_message_addresses_it_before_the_send_is_confirmed(
    running: tuple[Edge, RecordingGateway, FakeBot],
) -> None:
    # The platform echoed the bot's message (message 900) but has not yet answered the send call, so
    # the outbound does not know 900 as its own; the platform cannot tell whom 900 is from (get_msg
    # fails), and a member replies to it at once.
    edge, gateway, _ = running
    await say(edge, SELF_ID, [ob.text("明天下午三点开会")], message_id=900)
    await say(edge, 42, [ob.reply(900), ob.text("几点来着")], message_id=901)
    await settle(edge)
    echo, reply = gateway.messages
    assert echo.from_self
    assert not echo.addressed
    assert reply.reply_to == "900"
    assert reply.addressed
    assert edge.outbound.is_own_message("900")
