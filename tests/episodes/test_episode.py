"""The Episode value: legal transitions only, step records, and a record that round-trips."""

from __future__ import annotations

import json

import pytest

from runtime.episodes import (
    TRANSITIONS,
    Episode,
    EpisodeSettings,
    EpisodeStatus,
    Malformed,
    OutcomeKind,
    Reply,
    ScriptedReasoner,
    ToolCall,
    Wait,
    run_episode,
)
from runtime.episodes.episode import TERMINAL
from runtime.kernel.clock import ManualClock
from runtime.kernel.errors import IllegalTransition
from runtime.tools import ToolRegistry
from tests.episodes.conftest import new_episode


def test_terminal_states_have_no_way_out() -> None:
    for state in TERMINAL:
        assert TRANSITIONS[state] == frozenset()
    assert set(TRANSITIONS) == set(EpisodeStatus)


@pytest.mark.parametrize(
    ("start", "target"),
    [
        (EpisodeStatus.PENDING, EpisodeStatus.DONE),
        (EpisodeStatus.PENDING, EpisodeStatus.WAITING),
        (EpisodeStatus.WAITING, EpisodeStatus.THINKING),
        (EpisodeStatus.DONE, EpisodeStatus.THINKING),
        (EpisodeStatus.FAILED, EpisodeStatus.PENDING),
        (EpisodeStatus.ACTING, EpisodeStatus.DONE),
    ],
)
def test_illegal_transitions_raise(
    start: EpisodeStatus, target: EpisodeStatus, clock: ManualClock, settings: EpisodeSettings
) -> None:
    from dataclasses import replace

    episode = replace(new_episode(clock, settings), status=start)
    with pytest.raises(IllegalTransition) as info:
        episode.transition(target, clock.now())
    assert info.value.current == start.value
    assert episode.status is start


def test_transition_returns_a_new_value(clock: ManualClock, settings: EpisodeSettings) -> None:
    episode = new_episode(clock, settings)
    thinking = episode.transition(EpisodeStatus.THINKING, clock.now() + 1)
    assert episode.status is EpisodeStatus.PENDING
    assert thinking.status is EpisodeStatus.THINKING
    assert thinking.updated_at == clock.now() + 1


def test_start_refuses_nonsense_limits(clock: ManualClock) -> None:
    with pytest.raises(ValueError, match="max_steps"):
        Episode.start(id="e", chat_id="group:1", now=0, max_steps=0, time_limit=10)


@pytest.mark.asyncio
async def test_record_round_trips_through_json(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    script: list[object] = [
        ToolCall("lookup", {"word": "灰风"}, call_id="c1"),
        {"type": "bogus"},
        Wait(30, "等他们说完"),
    ]
    outcome = await run_episode(
        new_episode(clock, settings), ScriptedReasoner(script), tools, clock=clock, settings=settings
    )
    assert outcome.kind is OutcomeKind.WAITING
    record = json.loads(json.dumps(outcome.episode.to_record(), ensure_ascii=False))
    restored = Episode.from_record(record)
    assert restored == outcome.episode
    assert isinstance(restored.steps[1].action, Malformed)
    assert record["steps"][0]["action"] == {
        "type": "tool",
        "tool": "lookup",
        "args": {"word": "灰风"},
        "call_id": "c1",
    }
    assert record["status"] == "waiting"
    assert record["wait_until"] == clock.now() + 30


@pytest.mark.asyncio
async def test_record_explains_the_decision(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    outcome = await run_episode(
        new_episode(clock, settings),
        ScriptedReasoner([ToolCall("lookup", {"word": "月亮"}), Reply("是月亮")]),
        tools,
        clock=clock,
        settings=settings,
    )
    record = outcome.episode.to_record()
    assert record["reason"] == "replied"
    assert [s["action"]["type"] for s in record["steps"]] == ["tool", "reply"]
    assert record["steps"][0]["observation"]["content"] == "the moon"
    assert isinstance(outcome.episode.steps[1].action, Reply)
