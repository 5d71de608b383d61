"""wait is the proactive path: a waiting episode is an activation in the real scheduler, woken by
time or by its thread, and resumed with what was said meanwhile — on a manual clock, no sleeping."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from runtime.episodes import (
    RESUME_KIND,
    Episode,
    EpisodeSettings,
    EpisodeStatus,
    OutcomeKind,
    Reply,
    ScriptedReasoner,
    Wait,
    WaitingRoom,
    episode_id_of,
    run_episode,
)
from runtime.kernel.clock import ManualClock
from runtime.kernel.errors import IllegalTransition
from runtime.kernel.events import EventState
from runtime.kernel.kernel import Kernel
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings
from runtime.tools import ToolRegistry, ToolSpec
from tests.episodes.conftest import new_episode


@pytest.fixture
def sink() -> Kernel:
    return Kernel(KernelSettings(self_ids=("10001",)))


def message(
    clock: ManualClock, text: str, *, sender: str = "7", from_self: bool = False, group: str = "1"
) -> ChatMessage:
    return ChatMessage(
        message_id=f"m{clock.now()}",
        chat_kind=ChatKind.GROUP,
        chat_ident=group,
        sender_id=sender,
        sender_name=f"u{sender}",
        time=clock.now(),
        text=text,
        from_self=from_self,
    )


async def waiting_episode(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry, seconds: float = 600
) -> Episode:
    outcome = await run_episode(
        new_episode(clock, settings),
        ScriptedReasoner([Wait(seconds, "等他回来")]),
        tools,
        clock=clock,
        settings=settings,
    )
    assert outcome.kind is OutcomeKind.WAITING
    return outcome.episode


@pytest.mark.asyncio
async def test_wait_falls_due_and_resumes_with_the_thread_news(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry, sink: Kernel
) -> None:
    quiet = EpisodeSettings(**{**_fields(settings), "wake_on_thread_message": False})
    room = WaitingRoom(sink, quiet)
    episode = await waiting_episode(clock, quiet, tools)
    event_id = room.park(episode, clock.now())

    clock.advance(60)
    room.note_message(message(clock, "我回来了"), "th-1", clock.now())
    room.note_message(message(clock, "(bot echo)", from_self=True), "th-1", clock.now())
    assert sink.scheduler.due(clock.now()) == []  # not woken early: the setting is off

    clock.advance(539)
    assert sink.scheduler.due(clock.now()) == []  # one second early: still nothing
    clock.advance(1)
    (event,) = sink.scheduler.due(clock.now())
    assert event.id == event_id
    assert event.kind == RESUME_KIND
    episode_id = episode_id_of(event.payload)
    assert episode_id == "ep-1"

    resumed = room.take(episode_id, clock.now())
    assert resumed is not None
    assert resumed.status is EpisodeStatus.PENDING
    assert resumed.deadline == clock.now() + quiet.time_limit
    news = resumed.steps[-1].observation
    assert news is not None
    assert "我回来了" in news.content
    assert "bot echo" not in news.content

    def answer(ep: Episode, visible: Sequence[ToolSpec]) -> object:
        return Reply("欢迎回来" if "我回来了" in (ep.steps[-1].observation.content or "") else "?")  # type: ignore[union-attr]

    outcome = await run_episode(resumed, ScriptedReasoner([answer]), tools, clock=clock, settings=quiet)
    assert outcome.reply == "欢迎回来"
    assert room.statistics().waiting == 0


@pytest.mark.asyncio
async def test_thread_message_wakes_it_early_once_per_burst(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry, sink: Kernel
) -> None:
    room = WaitingRoom(sink, settings)
    episode = await waiting_episode(clock, settings, tools)
    first = room.park(episode, clock.now())

    clock.advance(10)
    assert room.note_message(message(clock, "在吗"), "th-1", clock.now()) == ["ep-1"]
    clock.advance(1)
    # Already due 4 s from now: a second message in the burst does not push it around.
    assert room.note_message(message(clock, "人呢"), "th-1", clock.now()) == []
    assert sink.events.require(first).state is EventState.SKIPPED
    assert len(sink.scheduler) == 1

    clock.advance(3.9)
    assert sink.scheduler.due(clock.now()) == []
    clock.advance(0.1)
    (event,) = sink.scheduler.due(clock.now())
    resumed = room.take(episode_id_of(event.payload) or "", clock.now())
    assert resumed is not None
    content = resumed.steps[-1].observation.content  # type: ignore[union-attr]
    assert "在吗" in content
    assert "人呢" in content


@pytest.mark.asyncio
async def test_other_threads_and_chats_do_not_wake_it(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry, sink: Kernel
) -> None:
    room = WaitingRoom(sink, settings)
    room.park(await waiting_episode(clock, settings, tools), clock.now())
    clock.advance(5)
    assert room.note_message(message(clock, "别的话题"), "th-2", clock.now()) == []
    assert room.note_message(message(clock, "另一个群", group="2"), "th-1", clock.now()) == []
    assert sink.scheduler.next_at() == clock.now() - 5 + 600


@pytest.mark.asyncio
async def test_resume_without_news_says_so(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry, sink: Kernel
) -> None:
    room = WaitingRoom(sink, settings)
    room.park(await waiting_episode(clock, settings, tools, seconds=30), clock.now())
    clock.advance(30)
    (event,) = sink.scheduler.due(clock.now())
    resumed = room.take(episode_id_of(event.payload) or "", clock.now())
    assert resumed is not None
    assert "nothing new" in resumed.steps[-1].observation.content  # type: ignore[union-attr]
    assert resumed.run == 1
    assert resumed.run_steps == 0


@pytest.mark.asyncio
async def test_a_late_resumption_expires_the_episode(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry, sink: Kernel
) -> None:
    room = WaitingRoom(sink, settings)
    room.park(await waiting_episode(clock, settings, tools, seconds=30), clock.now())
    clock.advance(30 + settings.resume_grace + 1)
    assert sink.scheduler.due(clock.now()) == []
    (gone,) = sink.scheduler.expire(clock.now())
    dropped = room.expire(episode_id_of(gone.payload) or "", clock.now())
    assert dropped is not None
    assert dropped.status is EpisodeStatus.EXPIRED
    assert room.take("ep-1", clock.now()) is None


@pytest.mark.asyncio
async def test_parked_episode_survives_a_restart_via_its_record(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry, sink: Kernel
) -> None:
    room = WaitingRoom(sink, settings)
    episode = await waiting_episode(clock, settings, tools)
    event_id = room.park(episode, clock.now())
    record = episode.to_record()

    fresh = WaitingRoom(sink, settings)
    fresh.restore(Episode.from_record(record), event_id)
    clock.advance(600)
    (event,) = sink.scheduler.due(clock.now())
    resumed = fresh.take(episode_id_of(event.payload) or "", clock.now())
    assert resumed is not None
    assert resumed.steps[0].action == Wait(600.0, "等他回来")


def test_only_waiting_episodes_can_be_parked(
    clock: ManualClock, settings: EpisodeSettings, sink: Kernel
) -> None:
    room = WaitingRoom(sink, settings)
    with pytest.raises(IllegalTransition):
        room.park(new_episode(clock, settings), clock.now())


def _fields(settings: EpisodeSettings) -> dict[str, object]:
    return {name: getattr(settings, name) for name in settings.__dataclass_fields__}
