"""Episodes through the store: a waiting episode written and read back is the same episode, and
its tool calls are in the tool-call log."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from runtime.episodes import (
    EpisodeSettings,
    OutcomeKind,
    Reply,
    ScriptedReasoner,
    ToolCall,
    Wait,
    run_episode,
)
from runtime.episodes.persist import from_store_record, to_store_record, tool_call_records
from runtime.kernel.clock import ManualClock
from runtime.store.memory import MemoryStore
from runtime.store.records import EpisodeRecord
from runtime.tools import ToolRegistry
from tests.episodes.conftest import new_episode


@pytest_asyncio.fixture
async def store() -> AsyncIterator[MemoryStore]:
    store = MemoryStore()
    yield store
    await store.close()


@pytest.mark.asyncio
async def test_waiting_episode_survives_the_store(
    store: MemoryStore, clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    script: list[object] = [ToolCall("lookup", {"word": "灰风"}), ToolCall("nope", {}), Wait(60, "等等")]
    outcome = await run_episode(
        new_episode(clock, settings), ScriptedReasoner(script), tools, clock=clock, settings=settings
    )
    assert outcome.kind is OutcomeKind.WAITING
    await store.save_episode(to_store_record(outcome.episode, session_id="s-1"))
    for call in tool_call_records(outcome.episode):
        await store.save_tool_call(call)

    stored = await store.get_episode("ep-1")
    assert stored is not None
    assert [s.kind for s in stored.steps] == ["episode", "tool", "tool", "wait"]
    assert from_store_record(stored) == outcome.episode

    calls = await store.list_tool_calls(episode_id="ep-1")
    assert [(c.tool, c.status) for c in calls] == [("lookup", "ok"), ("nope", "unknown_tool")]
    assert calls[0].result == "a grey wolf"
    assert calls[1].error == "unknown_tool"


@pytest.mark.asyncio
async def test_finished_episode_has_its_end(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    outcome = await run_episode(
        new_episode(clock, settings), ScriptedReasoner([Reply("好")]), tools, clock=clock, settings=settings
    )
    record = to_store_record(outcome.episode)
    assert (record.state, record.outcome, record.ended_at) == ("done", "replied", clock.now())


def test_foreign_records_are_refused() -> None:
    with pytest.raises(ValueError, match="header"):
        from_store_record(EpisodeRecord(id="x", chat_id="group:1", started_at=0.0, state="done"))


@pytest.mark.asyncio
async def test_what_a_waiting_episode_heard_survives_the_store(
    store: MemoryStore, clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    from runtime.episodes import Heard

    episode = new_episode(clock, settings, heard=(Heard("m1", "42"),))
    outcome = await run_episode(
        episode, ScriptedReasoner([Wait(60, "等等")]), tools, clock=clock, settings=settings
    )
    await store.save_episode(to_store_record(outcome.episode))
    stored = await store.get_episode("ep-1")
    assert stored is not None
    assert from_store_record(stored).heard == (Heard("m1", "42"),)
