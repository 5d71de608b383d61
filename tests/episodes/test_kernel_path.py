"""The whole proactive path on the real Kernel and a manual clock: an addressed message starts an
episode, it waits, its thread wakes it, ``Kernel.due`` hands the resumption back, and it replies."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from runtime.episodes import (
    RESUME_KIND,
    Episode,
    EpisodeSettings,
    OutcomeKind,
    Reply,
    ScriptedReasoner,
    Wait,
    WaitingRoom,
    episode_id_of,
    run_episode,
)
from runtime.kernel.clock import ManualClock
from runtime.kernel.events import EventState
from runtime.kernel.kernel import ActivationOutcome, Kernel
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.tools import ToolRegistry, ToolSpec

START = 1_700_000_000.0


def said(
    clock: ManualClock,
    text: str,
    n: int,
    *,
    addressed: bool = False,
    reply_to: str | None = None,
    sender: str = "alice",
) -> ChatMessage:
    return ChatMessage(
        message_id=f"m{n}",
        chat_kind=ChatKind.GROUP,
        chat_ident="1",
        sender_id=sender,
        sender_name=sender,
        time=clock.now(),
        text=text,
        addressed=addressed,
        reply_to=reply_to,
    )


@pytest.mark.asyncio
async def test_wait_then_reactivation_through_kernel_due(
    settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    clock = ManualClock(START)
    kernel = Kernel(now=START)
    room = WaitingRoom(kernel, settings)

    first = kernel.ingest(said(clock, "灰风，等我拿下外卖再聊", 1, addressed=True))
    assert first.action == "act_now"
    assert first.activation is not None
    began = kernel.deliberate(first.activation, clock.now())
    assert began.recheck(clock.now()).proceed
    episode = Episode.start(
        id="ep-1",
        chat_id=first.event.chat_id,
        now=clock.now(),
        max_steps=settings.max_steps,
        time_limit=settings.time_limit,
        event_id=first.event.id,
        thread_id=first.thread.thread.id,
        user_id="alice",
    )
    waiting = await run_episode(
        episode, ScriptedReasoner([Wait(900, "等她拿外卖回来")]), tools, clock=clock, settings=settings
    )
    assert waiting.kind is OutcomeKind.WAITING
    began.finish(clock.now(), EventState.SKIPPED, reason="waiting")
    resume_id = room.park(waiting.episode, clock.now(), forced=True)
    assert kernel.events.require(resume_id).kind == RESUME_KIND

    # Nothing is due before the wait is over, and nothing runs meanwhile.
    clock.advance(120)
    assert [a for a in kernel.due(clock.now()) if a.outcome is ActivationOutcome.READY] == []

    back = said(clock, "我回来了", 2, reply_to="m1")
    result = kernel.ingest(back)
    assert result.thread.thread.id == episode.thread_id
    assert room.note_message(back, result.thread.thread.id, clock.now()) == ["ep-1"]
    clock.advance(settings.wake_delay)
    ready = [a for a in kernel.due(clock.now()) if a.outcome is ActivationOutcome.READY]
    resumed_activation = next(a for a in ready if a.event.kind == RESUME_KIND)
    assert resumed_activation.event.id != resume_id  # rescheduled earlier, the first one cancelled
    assert kernel.events.require(resume_id).state is EventState.SKIPPED

    again = kernel.deliberate(resumed_activation, clock.now())
    assert again.recheck(clock.now()).proceed
    resumed = room.take(episode_id_of(resumed_activation.event.payload) or "", clock.now())
    assert resumed is not None

    def welcome(ep: Episode, visible: Sequence[ToolSpec]) -> object:
        news = ep.steps[-1].observation
        assert news is not None
        return Reply("外卖到啦？继续聊" if "我回来了" in news.content else "？")

    done = await run_episode(resumed, ScriptedReasoner([welcome]), tools, clock=clock, settings=settings)
    assert done.reply == "外卖到啦？继续聊"
    again.spoke(clock.now())
    again.finish(clock.now(), EventState.REPLIED)
    assert [a for a in kernel.due(clock.now() + 3_600) if a.event.kind == RESUME_KIND] == []


@pytest.mark.asyncio
async def test_an_unwoken_wait_falls_due_at_until(settings: EpisodeSettings, tools: ToolRegistry) -> None:
    clock = ManualClock(START)
    kernel = Kernel(now=START)
    room = WaitingRoom(kernel, settings)
    episode = Episode.start(
        id="ep-2", chat_id="group:1", now=clock.now(), max_steps=3, time_limit=30, thread_id="th-x"
    )
    waiting = await run_episode(
        episode, ScriptedReasoner([Wait(300, "check back")]), tools, clock=clock, settings=settings
    )
    room.park(waiting.episode, clock.now())
    clock.advance(299)
    assert kernel.due(clock.now()) == []
    clock.advance(1)
    (activation,) = kernel.due(clock.now())
    assert activation.outcome is ActivationOutcome.READY
    assert episode_id_of(activation.event.payload) == "ep-2"
