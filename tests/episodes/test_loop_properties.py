"""Whatever a reasoner says, the loop ends in a clear state within its limits, along legal
transitions, with a record that round-trips."""

from __future__ import annotations

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.episodes import (
    TRANSITIONS,
    Episode,
    EpisodeSettings,
    EpisodeStatus,
    OutcomeKind,
    ScriptedReasoner,
    run_episode,
)
from runtime.kernel.clock import ManualClock
from runtime.tools import ToolContext, ToolRegistry, ToolSpec

EXPECTED_STATUS = {
    OutcomeKind.REPLIED: EpisodeStatus.DONE,
    OutcomeKind.OBSERVED: EpisodeStatus.DONE,
    OutcomeKind.WAITING: EpisodeStatus.WAITING,
    OutcomeKind.EXPIRED: EpisodeStatus.EXPIRED,
    OutcomeKind.DEADLINE: EpisodeStatus.EXPIRED,
    OutcomeKind.STEP_LIMIT: EpisodeStatus.FAILED,
    OutcomeKind.FAILED: EpisodeStatus.FAILED,
}

garbage = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.dictionaries(
        st.sampled_from(["type", "text", "seconds", "tool", "args"]),
        st.one_of(st.text(max_size=5), st.integers(-5, 100), st.none()),
        max_size=3,
    ),
)
actions = st.one_of(
    st.builds(lambda t: {"type": "reply", "text": t}, st.text(max_size=5)),
    st.builds(lambda s: {"type": "wait", "seconds": s, "reason": "r"}, st.integers(-10, 5_000)),
    st.just({"type": "observe"}),
    st.just({"type": "expire"}),
    st.builds(
        lambda n, a: {"type": "tool", "tool": n, "args": a},
        st.sampled_from(["echo", "boom", "missing", "admin_only"]),
        st.dictionaries(st.sampled_from(["x", "y"]), st.integers(0, 2), max_size=2),
    ),
    garbage,
)


def registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(ToolSpec(name="echo", description="Echo.", execute=lambda a, c: a))

    def boom(args: object, ctx: ToolContext) -> object:
        raise ValueError("no")

    tools.register(ToolSpec(name="boom", description="Boom.", execute=boom))
    tools.register(
        ToolSpec(
            name="admin_only",
            description="Admin.",
            permissions=frozenset({"admin"}),
            execute=lambda a, c: "ok",
        )
    )
    return tools


@settings(max_examples=200, deadline=None)
@given(script=st.lists(actions, max_size=12))
def test_any_script_ends_clearly(script: list[object]) -> None:
    limits = EpisodeSettings(
        max_steps=5, time_limit=60, max_consecutive_failures=3, min_wait=5, max_wait=3_600, max_waits=1
    )
    clock = ManualClock(1_000.0)
    episode = Episode.start(
        id="ep", chat_id="group:1", now=clock.now(), max_steps=limits.max_steps, time_limit=limits.time_limit
    )

    async def go() -> object:
        return await run_episode(episode, ScriptedReasoner(script), registry(), clock=clock, settings=limits)

    outcome = anyio.run(go)
    final = outcome.episode  # type: ignore[attr-defined]
    assert final.status is EXPECTED_STATUS[outcome.kind]  # type: ignore[attr-defined]
    assert TRANSITIONS[final.status] == frozenset() or final.status is EpisodeStatus.WAITING
    assert final.run_steps <= limits.max_steps
    assert len(final.steps) <= min(len(script), limits.max_steps)
    assert final.reason
    if outcome.kind is OutcomeKind.REPLIED:  # type: ignore[attr-defined]
        assert outcome.reply  # type: ignore[attr-defined]
    assert Episode.from_record(final.to_record()) == final
