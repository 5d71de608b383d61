"""A reply may name the message it answers; the bot's own messages are never quoted, whatever the
model asks: the reply is refused and the episode is told why."""

from __future__ import annotations

import pytest

from runtime.episodes import (
    OWN_MESSAGE,
    EpisodeSettings,
    Heard,
    OutcomeKind,
    Reply,
    ScriptedReasoner,
    episode_messages,
    parse_action,
    run_episode,
)
from runtime.episodes.control_tools import action_from_tool_call
from runtime.kernel.clock import ManualClock
from runtime.tools import ToolRegistry
from tests.episodes.conftest import new_episode

HEARD = (Heard("m1", "42"), Heard("m2", "43"))


def own_or_unknown(chat_id: str, message_id: str) -> str | None:
    return OWN_MESSAGE if message_id == "900001" else "there is no such message"


@pytest.mark.asyncio
async def test_a_reply_quoting_a_heard_message_names_it(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    episode = new_episode(clock, settings, heard=HEARD)
    reasoner = ScriptedReasoner([{"type": "reply", "text": "对", "quote": "#m2"}])
    outcome = await run_episode(episode, reasoner, tools, clock=clock, settings=settings)
    assert outcome.kind is OutcomeKind.REPLIED
    assert outcome.quote == "m2"


@pytest.mark.asyncio
async def test_quoting_its_own_message_is_refused_and_the_model_is_told(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    episode = new_episode(clock, settings, heard=HEARD)
    script = [
        action_from_tool_call("reply", '{"text": "我刚才说过了", "quote": "#900001"}'),
        Reply("好的"),
    ]
    reasoner = ScriptedReasoner(script)
    outcome = await run_episode(
        episode, reasoner, tools, clock=clock, settings=settings, quotes=own_or_unknown
    )
    assert outcome.kind is OutcomeKind.REPLIED
    assert outcome.reply == "好的"
    assert outcome.quote is None
    refused = outcome.episode.steps[0]
    assert refused.observation is not None
    assert refused.observation.error == "quote_refused"
    assert "your own message" in refused.observation.content
    # what the model is shown next: its refused reply and why
    shown = episode_messages(outcome.episode)
    assert shown[0]["tool_calls"][0]["function"]["name"] == "reply"
    assert "your own message" in shown[1]["content"]


@pytest.mark.asyncio
async def test_the_bots_own_messages_are_never_quoted_however_often_it_asks(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    episode = new_episode(clock, settings, heard=HEARD)
    script = [{"type": "reply", "text": "再说一遍", "quote": "900001"}] * 10
    outcome = await run_episode(
        episode, ScriptedReasoner(script), tools, clock=clock, settings=settings, quotes=own_or_unknown
    )
    assert outcome.kind is OutcomeKind.FAILED  # the failure guard ends it; nothing was said
    assert outcome.reply is None
    assert "too_many_failures" in outcome.reason


@pytest.mark.asyncio
async def test_without_a_check_only_heard_messages_may_be_quoted(
    clock: ManualClock, settings: EpisodeSettings, tools: ToolRegistry
) -> None:
    episode = new_episode(clock, settings, heard=HEARD)
    reasoner = ScriptedReasoner([Reply("嗯", quote="m9"), Reply("嗯")])
    outcome = await run_episode(episode, reasoner, tools, clock=clock, settings=settings)
    assert outcome.reply == "嗯"
    assert outcome.quote is None
    assert outcome.episode.steps[0].observation is not None


def test_the_quote_is_read_from_the_reply_action() -> None:
    assert parse_action({"type": "reply", "text": "x", "quote": "#123"}) == Reply("x", "123")
    assert parse_action({"type": "reply", "text": "x", "reply_to": 123}) == Reply("x", "123")
    assert parse_action({"type": "reply", "text": "x", "quote": ""}) == Reply("x")
    assert parse_action({"type": "reply", "text": "x", "quote": ["a"]}).type == "malformed"
