"""The ReAct loop (design/0002 §9/§13): reply, wait, observe, tool, step limit, deadline, and the
guards that keep a confused model from looping."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import anyio
import pytest

from runtime.episodes import (
    Episode,
    EpisodeSettings,
    EpisodeStatus,
    Expire,
    Observe,
    OutcomeKind,
    Reply,
    ScriptedReasoner,
    ToolCall,
    Wait,
    run_episode,
)
from runtime.kernel.clock import ManualClock
from runtime.kernel.errors import IllegalTransition
from runtime.tools import ToolContext, ToolRegistry, ToolSpec
from tests.episodes.conftest import new_episode


async def run(
    script: list[object], clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry, **kw: object
):  # type: ignore[no-untyped-def]
    reasoner = ScriptedReasoner(script)
    outcome = await run_episode(
        new_episode(clock, settings), reasoner, tools, clock=clock, settings=settings, **kw
    )  # type: ignore[arg-type]
    return outcome, reasoner


@pytest.mark.asyncio
async def test_reply_ends_the_episode_done(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    outcome, _ = await run([Reply("在的")], clock, settings, tools)
    assert outcome.kind is OutcomeKind.REPLIED
    assert outcome.reply == "在的"
    assert outcome.episode.status is EpisodeStatus.DONE
    assert len(outcome.episode.steps) == 1


@pytest.mark.asyncio
async def test_observe_and_expire(clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry) -> None:
    observed, _ = await run([Observe("just chatter")], clock, settings, tools)
    assert observed.kind is OutcomeKind.OBSERVED
    assert observed.episode.status is EpisodeStatus.DONE
    assert observed.reply is None
    expired, _ = await run([{"type": "expire", "reason": "topic moved on"}], clock, settings, tools)
    assert expired.kind is OutcomeKind.EXPIRED
    assert expired.episode.status is EpisodeStatus.EXPIRED
    assert "topic moved on" in expired.reason


@pytest.mark.asyncio
async def test_wait_returns_waiting_with_until(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    outcome, _ = await run([Wait(120, "let them finish")], clock, settings, tools)
    assert outcome.kind is OutcomeKind.WAITING
    assert outcome.until == clock.now() + 120
    assert outcome.episode.status is EpisodeStatus.WAITING
    assert outcome.episode.waits == 1


@pytest.mark.asyncio
async def test_tool_result_is_observed_then_reply(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    def answer(episode: Episode, visible: Sequence[ToolSpec]) -> object:
        observation = episode.steps[-1].observation
        assert observation is not None
        return Reply(f"查到了：{observation.content}")

    outcome, reasoner = await run([ToolCall("lookup", {"word": "灰风"}), answer], clock, settings, tools)
    assert outcome.reply == "查到了：a grey wolf"
    first = outcome.episode.steps[0]
    assert first.action == ToolCall("lookup", {"word": "灰风"})
    assert first.observation is not None
    assert first.observation.ok
    assert reasoner.remaining == 0


@pytest.mark.asyncio
async def test_step_limit_is_its_own_outcome(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    words = ["a", "b", "c", "d", "e", "f", "g"]
    script: list[object] = [ToolCall("lookup", {"word": w}) for w in words]
    outcome, reasoner = await run(script, clock, settings, tools)
    assert outcome.kind is OutcomeKind.STEP_LIMIT
    assert outcome.episode.status is EpisodeStatus.FAILED
    assert len(outcome.episode.steps) == settings.max_steps
    assert reasoner.remaining == 1


@pytest.mark.asyncio
async def test_deadline_passed_between_steps(clock: ManualClock, settings: EpisodeSettings) -> None:
    slow = ToolRegistry()

    def tick(args: object, ctx: ToolContext) -> str:
        clock.advance(61)
        return "done, slowly"

    slow.register(ToolSpec(name="slow", description="Slow.", execute=tick))
    outcome, reasoner = await run([ToolCall("slow", {}), Reply("never said")], clock, settings, slow)
    assert outcome.kind is OutcomeKind.DEADLINE
    assert outcome.episode.status is EpisodeStatus.EXPIRED
    assert reasoner.remaining == 1


@pytest.mark.asyncio
async def test_reasoner_that_hangs_is_cut_at_the_deadline(clock: ManualClock, tools: ToolRegistry) -> None:
    class Hanging:
        async def next(self, episode: Episode, tools: Sequence[ToolSpec]) -> object:
            await anyio.sleep(30)
            return Reply("too late")

    quick = EpisodeSettings(time_limit=0.05)
    episode = new_episode(clock, quick)
    with anyio.fail_after(5):
        outcome = await run_episode(episode, Hanging(), tools, clock=clock, settings=quick)
    assert outcome.kind is OutcomeKind.DEADLINE
    assert "reasoner did not answer" in outcome.reason


@pytest.mark.asyncio
async def test_tool_timeout_becomes_an_observation(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    async def hang(args: object, ctx: ToolContext) -> str:
        await anyio.sleep(30)
        return "never"

    tools.register(ToolSpec(name="hang", description="Hangs.", execute=hang, timeout=0.05))
    with anyio.fail_after(5):
        outcome, _ = await run([ToolCall("hang", {}), Reply("那个工具卡住了")], clock, settings, tools)
    assert outcome.kind is OutcomeKind.REPLIED
    observation = outcome.episode.steps[0].observation
    assert observation is not None
    assert observation.error == "timeout"


@pytest.mark.asyncio
async def test_repeated_identical_call_stops_the_loop(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    call = {"type": "tool", "tool": "lookup", "args": {"word": "月亮"}}
    outcome, reasoner = await run([call, dict(call), Reply("x")], clock, settings, tools)
    assert outcome.kind is OutcomeKind.FAILED
    assert outcome.reason.startswith("repeated_tool_call")
    assert outcome.episode.steps[-1].observation is not None
    assert outcome.episode.steps[-1].observation.error == "repeated_tool_call"
    assert reasoner.remaining == 1


@pytest.mark.asyncio
async def test_same_tool_with_other_arguments_is_not_a_repeat(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    script: list[object] = [
        ToolCall("lookup", {"word": "月亮"}),
        ToolCall("lookup", {"word": "灰风"}),
        Reply("ok"),
    ]
    outcome, _ = await run(script, clock, settings, tools)
    assert outcome.kind is OutcomeKind.REPLIED


@pytest.mark.asyncio
async def test_unknown_tool_is_a_failure_observation_the_model_can_recover_from(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    outcome, reasoner = await run(
        [ToolCall("lookupp", {"word": "x"}), ToolCall("lookup", {"word": "月亮"}), Reply("好")],
        clock,
        settings,
        tools,
    )
    assert outcome.kind is OutcomeKind.REPLIED
    failed = outcome.episode.steps[0].observation
    assert failed is not None
    assert failed.error == "unknown_tool"
    assert "lookup" in failed.content
    # The reasoner saw the failure before its second step.
    assert reasoner.seen[1].steps[0].observation == failed


@pytest.mark.asyncio
async def test_consecutive_failures_end_the_episode(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    script: list[object] = [ToolCall("nope", {"n": 1}), {"type": "dance"}, ToolCall("lookup", {}), Reply("x")]
    outcome, reasoner = await run(script, clock, settings, tools)
    assert outcome.kind is OutcomeKind.FAILED
    assert outcome.episode.status is EpisodeStatus.FAILED
    assert outcome.reason.startswith("too_many_failures: 3")
    errors = [s.observation.error for s in outcome.episode.steps if s.observation]
    assert errors == ["unknown_tool", "malformed_action", "invalid_arguments"]
    assert reasoner.remaining == 1


@pytest.mark.asyncio
async def test_a_success_resets_the_failure_count(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    script: list[object] = [
        ToolCall("nope", {}),
        ToolCall("nope", {"n": 2}),
        ToolCall("lookup", {"word": "a"}),
        ToolCall("nope", {"n": 3}),
        ToolCall("nope", {"n": 4}),
        Reply("ok"),
    ]
    outcome, _ = await run(script, clock, settings, tools)
    assert outcome.kind is OutcomeKind.REPLIED


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "garbage",
    [
        None,
        42,
        "reply",
        {"type": "reply"},
        {"type": "wait", "seconds": -1},
        {"type": "tool", "tool": "lookup", "args": "{broken"},
        [1, 2],
    ],
)
async def test_garbage_from_the_reasoner_ends_failed_with_the_reason(
    garbage: object, clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    outcome, _ = await run([garbage, garbage, garbage, Reply("x")], clock, settings, tools)
    assert outcome.kind is OutcomeKind.FAILED
    assert "malformed_action" in outcome.reason
    assert all(s.observation and s.observation.error == "malformed_action" for s in outcome.episode.steps)


@pytest.mark.asyncio
async def test_reasoner_that_raises_fails_the_episode(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    def explode(episode: Episode, visible: Sequence[ToolSpec]) -> object:
        raise ConnectionError("model endpoint down")

    outcome, _ = await run([explode], clock, settings, tools)
    assert outcome.kind is OutcomeKind.FAILED
    assert "ConnectionError" in outcome.reason
    assert "model endpoint down" in outcome.reason


@pytest.mark.asyncio
async def test_wait_out_of_range_or_too_often_is_refused(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    outcome, _ = await run([Wait(1, "too short"), Reply("ok")], clock, settings, tools)
    assert outcome.kind is OutcomeKind.REPLIED
    refusal = outcome.episode.steps[0].observation
    assert refusal is not None
    assert refusal.error == "wait_refused"
    assert "between 5 and 3600" in refusal.content

    waited = replace(new_episode(clock, settings), waits=settings.max_waits)
    again = ScriptedReasoner([Wait(60, "again"), Observe("fine")])
    out = await run_episode(waited, again, tools, clock=clock, settings=settings)
    assert out.kind is OutcomeKind.OBSERVED
    refused = out.episode.steps[0].observation
    assert refused is not None
    assert "already waited 2 times" in refused.content


@pytest.mark.asyncio
async def test_permissions_limit_what_the_reasoner_sees_and_calls(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    tools.register(
        ToolSpec(
            name="kick",
            description="Kick someone.",
            permissions=frozenset({"admin"}),
            side_effect=True,
            execute=lambda a, c: "kicked",
        )
    )
    seen: list[list[str]] = []

    def look(episode: Episode, visible: Sequence[ToolSpec]) -> object:
        seen.append([t.name for t in visible])
        return ToolCall("kick", {})

    outcome, _ = await run([look, Expire("not allowed")], clock, settings, tools)
    assert seen == [["lookup"]]
    observation = outcome.episode.steps[0].observation
    assert observation is not None
    assert observation.error == "permission_denied"
    admin, _ = await run([look, Reply("done")], clock, settings, tools, permissions={"admin"})
    assert seen[-1] == ["lookup", "kick"]
    assert admin.episode.steps[0].observation.content == "kicked"  # type: ignore[union-attr]


@pytest.mark.asyncio
async def test_ten_megabyte_tool_result_is_truncated_in_the_record(
    clock: ManualClock, settings: EpisodeSettings
) -> None:
    big = ToolRegistry(max_result_chars=2_000)
    big.register(ToolSpec(name="dump", description="Dump.", execute=lambda a, c: "数" * 10_000_000))
    outcome, _ = await run([ToolCall("dump", {}), Reply("太长了")], clock, settings, big)
    observation = outcome.episode.steps[0].observation
    assert observation is not None
    assert observation.truncated
    assert observation.full_size == 10_000_000
    assert len(outcome.episode.to_record()["steps"][0]["observation"]["content"]) < 2_100


@pytest.mark.asyncio
async def test_only_pending_episodes_run(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    outcome, _ = await run([Reply("hi")], clock, settings, tools)
    with pytest.raises(IllegalTransition):
        await run_episode(
            outcome.episode, ScriptedReasoner([Reply("again")]), tools, clock=clock, settings=settings
        )


@pytest.mark.asyncio
async def test_steps_record_timings(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    def think(episode: Episode, visible: Sequence[ToolSpec]) -> object:
        clock.advance(2)
        return ToolCall("lookup", {"word": "灰风"})

    outcome, _ = await run([think, Reply("ok")], clock, settings, tools)
    step = outcome.episode.steps[0]
    assert step.decided_at - step.started_at == 2
    assert step.finished_at >= step.decided_at


@pytest.mark.asyncio
async def test_a_tool_cannot_outlive_the_run(clock: ManualClock) -> None:
    async def slow(args: object, ctx: ToolContext) -> str:
        await anyio.sleep(30)
        return "late"

    tools = ToolRegistry(default_timeout=20)
    tools.register(ToolSpec(name="slow", description="Slow.", execute=slow))
    quick = EpisodeSettings(time_limit=0.1)
    with anyio.fail_after(5):
        outcome = await run_episode(
            new_episode(clock, quick),
            ScriptedReasoner([ToolCall("slow", {})]),
            tools,
            clock=clock,
            settings=quick,
        )
    assert outcome.kind is OutcomeKind.DEADLINE
    assert outcome.episode.status is EpisodeStatus.EXPIRED
    assert "slow was still running" in outcome.reason
    assert outcome.episode.steps[-1].observation.error == "deadline"  # type: ignore[union-attr]
