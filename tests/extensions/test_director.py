"""The LifeDirector tick: intervals, silence is not activity, quiet hours, caps, and sources that
misbehave without disturbing the others."""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import anyio.lowlevel
import pytest

from runtime.config import parse_config
from runtime.extensions import (
    ActivitySpec,
    ChatActivityLog,
    ExtensionRegistry,
    LifeContext,
    LifeDirector,
    LifeSettings,
    LifeSourceSpec,
    Proposal,
    Scope,
)
from runtime.kernel.clock import ManualClock
from runtime.kernel.kernel import Kernel
from tests.extensions.conftest import NOON, said


def greeter(chat: str = "group:1", **proposal: object) -> LifeSourceSpec:
    return LifeSourceSpec("greeter", lambda ctx: [Proposal(chat, "say hi", **proposal)], 60)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_source_is_polled_on_its_interval(
    registry: ExtensionRegistry,
    director: LifeDirector,
    chats: ChatActivityLog,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    polls: list[float] = []

    def poll(ctx: LifeContext) -> None:
        polls.append(ctx.now)

    registry.register_life_source(plugin, LifeSourceSpec("clockwork", poll, 60))
    for _ in range(5):
        await director.tick()
        clock.advance(30)
    assert polls == [NOON, NOON + 60, NOON + 120]


@pytest.mark.asyncio
async def test_a_live_chat_gets_an_activation_with_its_times(
    registry: ExtensionRegistry,
    director: LifeDirector,
    chats: ChatActivityLog,
    sink: Kernel,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    chats.note(said(clock, "1"))
    clock.advance(600)
    registry.register_life_source(plugin, greeter(not_before=NOON + 900, priority=0.7))
    report = await director.tick()
    (event_id,) = report.emitted
    event = sink.events.require(event_id)
    assert (event.chat_id, event.kind, event.priority) == ("group:1", "proactive", 0.7)
    assert event.not_before == NOON + 900
    assert event.deadline == NOON + 900 + 600
    assert event.payload["source"] == "life_source:greeter"
    assert event.payload["reason"] == "say hi"
    assert sink.scheduler.due(NOON + 899) == []
    assert [e.id for e in sink.scheduler.due(NOON + 900)] == [event_id]


@pytest.mark.asyncio
async def test_silence_is_not_activity(
    registry: ExtensionRegistry,
    director: LifeDirector,
    chats: ChatActivityLog,
    sink: Kernel,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    registry.register_life_source(plugin, greeter())
    never = await director.tick()
    assert never.emitted == ()
    assert never.suppressed[0][1].startswith("no_activity")

    chats.note(said(clock, "1"))
    clock.advance(3_601)
    # The bot talking into the quiet group does not make it live.
    chats.note(said(clock, "1", "有人吗", from_self=True))
    stale = await director.tick()
    assert stale.emitted == ()
    assert "no_activity" in stale.suppressed[0][1]
    assert len(sink.scheduler) == 0

    chats.note(said(clock, "1", "我来了"))
    clock.advance(60)
    live = await director.tick()
    assert len(live.emitted) == 1
    assert director.statistics().suppressed_inactive == 2


@pytest.mark.asyncio
async def test_active_chats_are_offered_to_sources(
    registry: ExtensionRegistry,
    director: LifeDirector,
    chats: ChatActivityLog,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    seen: list[tuple[str, ...]] = []
    spec = LifeSourceSpec("peek", lambda ctx: seen.append(ctx.active_chats), 60)
    registry.register_life_source(plugin, spec)
    chats.note(said(clock, "1"))
    clock.advance(10)
    chats.note(said(clock, "2"))
    chats.note(said(clock, "3", from_self=True))
    await director.tick()
    assert seen == [("group:2", "group:1")]


@pytest.mark.parametrize(
    ("hour", "quiet"), [(22, False), (23, True), (2, True), (7, True), (8, False), (12, False)]
)
def test_quiet_hours_wrap_midnight_in_the_configured_zone(
    hour: int, quiet: bool, director: LifeDirector
) -> None:
    # Asia/Shanghai is UTC+8 all year.
    when = datetime(2026, 11, 29, (hour - 8) % 24, 30, tzinfo=UTC).timestamp()
    assert director.quiet_at(when) is quiet


@pytest.mark.asyncio
async def test_no_proactive_message_starts_in_quiet_hours(
    registry: ExtensionRegistry,
    director: LifeDirector,
    chats: ChatActivityLog,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    chats.note(said(clock, "1"))
    # Noon now, but it wants to speak at 23:30 local.
    registry.register_life_source(plugin, greeter(not_before=NOON + 11.5 * 3_600))
    report = await director.tick()
    assert report.emitted == ()
    assert report.suppressed == (("group:1", "quiet_hours"),)
    assert director.statistics().suppressed_quiet == 1


def test_settings_from_config() -> None:
    config = parse_config({"life": {"quiet_hours": "22:30-07:00", "timezone": "UTC", "tick_ms": 5_000}})
    settings = LifeSettings.from_config(config.life)
    assert (settings.quiet_start, settings.quiet_end, settings.tick) == (22 * 60 + 30, 7 * 60, 5.0)
    assert LifeSettings.from_config(parse_config({"life": {"quiet_hours": ""}}).life).quiet_start is None


@pytest.mark.asyncio
async def test_no_quiet_hours_when_disabled(
    registry: ExtensionRegistry, sink: Kernel, chats: ChatActivityLog, clock: ManualClock
) -> None:
    settings = LifeSettings(quiet_start=None, quiet_end=None)
    director = LifeDirector(registry, sink, chats, clock=clock, settings=settings)
    assert not director.quiet_at(datetime(2026, 11, 29, 18, 0, tzinfo=UTC).timestamp())


@pytest.mark.asyncio
async def test_emissions_per_tick_are_capped(
    registry: ExtensionRegistry,
    director: LifeDirector,
    chats: ChatActivityLog,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    for n in range(5):
        chats.note(said(clock, str(n)))
    registry.register_life_source(
        plugin, LifeSourceSpec("spam", lambda ctx: [Proposal(c, "hello") for c in ctx.active_chats], 60)
    )
    report = await director.tick()
    assert len(report.emitted) == 3
    assert [r for _, r in report.suppressed] == ["tick_cap", "tick_cap"]


@pytest.mark.asyncio
async def test_misbehaving_sources_stay_local(
    registry: ExtensionRegistry,
    director: LifeDirector,
    chats: ChatActivityLog,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    async def hang(ctx: LifeContext) -> None:
        await anyio.sleep(30)

    def boom(ctx: LifeContext) -> None:
        raise RuntimeError("feed down")

    chats.note(said(clock, "1"))
    registry.register_life_source(plugin, LifeSourceSpec("boom", boom, 60))
    registry.register_life_source(plugin, LifeSourceSpec("hang", hang, 60))
    registry.register_life_source(plugin, LifeSourceSpec("garbage", lambda ctx: ["not a proposal"], 60))
    registry.register_activity(plugin, ActivitySpec("walk", lambda ctx: {"chat": 1}, 60))
    registry.register_life_source(plugin, greeter())
    with anyio.fail_after(5):
        report = await director.tick()
    assert set(report.failed) == {
        "life_source:boom",
        "life_source:hang",
        "life_source:garbage",
        "activity:walk",
    }
    assert len(report.emitted) == 1
    assert director.statistics().failures == 4


@pytest.mark.asyncio
async def test_async_sources_are_awaited(
    registry: ExtensionRegistry,
    director: LifeDirector,
    chats: ChatActivityLog,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    async def poll(ctx: LifeContext) -> list[Proposal]:
        await anyio.lowlevel.checkpoint()
        return [Proposal("group:1", "async hello")]

    chats.note(said(clock, "1"))
    registry.register_life_source(plugin, LifeSourceSpec("later", poll, 60))
    assert len((await director.tick()).emitted) == 1


def test_allowed_rechecks_a_chat_at_fire_time(
    director: LifeDirector, chats: ChatActivityLog, clock: ManualClock
) -> None:
    chats.note(said(clock, "1"))
    assert director.allowed("group:1", clock.now()).allowed
    assert not director.allowed("group:1", clock.now() + 3_601).allowed
    assert director.allowed("group:2", clock.now()).reason.startswith("no_activity")


@pytest.mark.asyncio
async def test_disabled_director_does_nothing(
    registry: ExtensionRegistry,
    sink: Kernel,
    chats: ChatActivityLog,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    director = LifeDirector(registry, sink, chats, clock=clock, settings=LifeSettings(enabled=False))
    chats.note(said(clock, "1"))
    registry.register_life_source(plugin, greeter())
    report = await director.tick()
    assert (report.called, report.emitted) == ((), ())


@pytest.mark.asyncio
async def test_run_keeps_ticking_until_cancelled(
    registry: ExtensionRegistry,
    sink: Kernel,
    chats: ChatActivityLog,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    polls: list[float] = []
    registry.register_life_source(plugin, LifeSourceSpec("count", lambda ctx: polls.append(ctx.now), 1))
    director = LifeDirector(registry, sink, chats, clock=clock, settings=LifeSettings(tick=0.01))

    def advance(ctx: LifeContext) -> None:
        clock.advance(1)

    registry.register_activity(plugin, ActivitySpec("time", advance, 1))
    with anyio.move_on_after(0.2):
        await director.run()
    assert len(polls) >= 3
    assert director.statistics().ticks >= 3


@pytest.mark.asyncio
async def test_a_source_withdrawn_while_it_runs_emits_nothing(
    registry: ExtensionRegistry,
    director: LifeDirector,
    chats: ChatActivityLog,
    sink: Kernel,
    clock: ManualClock,
    plugin: Scope,
) -> None:
    chats.note(said(clock, "1"))
    disposers: list[object] = []

    async def poll(ctx: LifeContext) -> list[Proposal]:
        disposers[0]()  # type: ignore[operator]
        return [Proposal("group:1", "too late")]

    disposers.append(registry.register_life_source(plugin, LifeSourceSpec("fickle", poll, 60)))
    report = await director.tick()
    assert report.emitted == ()
    assert len(sink.scheduler) == 0
    assert director.statistics().timers == 0
