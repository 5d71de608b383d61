"""Parsing the reasoner's output, and the control actions as OpenAI tools."""

from __future__ import annotations

import json

import pytest

from runtime.episodes import (
    CONTROL_TOOLS,
    Episode,
    EpisodeSettings,
    Expire,
    Malformed,
    Observe,
    Reply,
    ScriptedReasoner,
    ToolCall,
    Wait,
    action_from_text,
    action_from_tool_call,
    episode_messages,
    parse_action,
    resume,
    run_episode,
)
from runtime.episodes.episode import Observation
from runtime.kernel.clock import ManualClock
from runtime.tools import ToolRegistry, ToolSpec


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"type": "reply", "text": "好"}, Reply("好")),
        ({"type": "wait", "seconds": 30, "reason": "r"}, Wait(30.0, "r")),
        ({"type": "observe"}, Observe("")),
        ({"type": "expire", "reason": "late"}, Expire("late")),
        ({"type": "tool", "tool": "t", "args": {"a": 1}}, ToolCall("t", {"a": 1})),
        ({"type": "tool", "name": "t", "arguments": '{"a": 1}'}, ToolCall("t", {"a": 1})),
        ({"type": "tool", "tool": "t"}, ToolCall("t", {})),
    ],
)
def test_well_formed_actions(raw: object, expected: object) -> None:
    assert parse_action(raw) == expected


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"type": "reply", "text": "  "}, "non-empty"),
        ({"type": "wait"}, "seconds"),
        ({"type": "wait", "seconds": True}, "seconds"),
        ({"type": "tool", "args": {}}, "name of a tool"),
        ({"type": "tool", "tool": "t", "args": [1]}, "JSON object"),
        ({"type": "fly"}, "unknown action type"),
        ("reply", "expected an action object"),
    ],
)
def test_malformed_actions_say_why(raw: object, words: str) -> None:
    parsed = parse_action(raw)
    assert isinstance(parsed, Malformed)
    assert words in parsed.problem


def test_huge_garbage_is_shown_cut() -> None:
    parsed = parse_action({"type": "fly", "payload": "x" * 1_000_000})
    assert isinstance(parsed, Malformed)
    assert len(parsed.raw) < 600


def test_control_tools_are_the_four_protocol_actions() -> None:
    names = [t["function"]["name"] for t in CONTROL_TOOLS]
    assert names == ["reply", "wait", "observe", "expire"]
    wait = CONTROL_TOOLS[1]["function"]["parameters"]
    assert wait["required"] == ["seconds", "reason"]


def test_tool_calls_map_to_actions() -> None:
    assert action_from_tool_call("reply", '{"text": "在"}') == Reply("在")
    assert action_from_tool_call("wait", {"seconds": 60, "reason": "等"}) == Wait(60.0, "等")
    assert action_from_tool_call("observe", "") == Observe("")
    assert action_from_tool_call("guess", '{"n": 3}', call_id="c9") == ToolCall("guess", {"n": 3}, "c9")
    broken = action_from_tool_call("reply", "{text:")
    assert isinstance(broken, Malformed)
    assert "not valid JSON" in broken.problem
    assert isinstance(action_from_tool_call("reply", "[1]"), Malformed)


def test_plain_text_is_a_reply() -> None:
    assert action_from_text("你好") == Reply("你好")
    assert isinstance(action_from_text(""), Malformed)
    assert isinstance(action_from_text(None), Malformed)


@pytest.mark.asyncio
async def test_episode_steps_become_chat_messages_with_paired_tool_calls() -> None:
    clock = ManualClock(100.0)
    settings = EpisodeSettings(min_wait=1)
    tools = ToolRegistry()
    tools.register(ToolSpec(name="echo", description="Echo.", execute=lambda a, c: "pong"))
    episode = Episode.start(id="e", chat_id="group:1", now=clock.now(), max_steps=5, time_limit=60)
    script: list[object] = [
        ToolCall("echo", {"x": 1}, call_id="abc"),
        {"type": "nonsense"},
        Wait(30, "later"),
    ]
    waiting = await run_episode(episode, ScriptedReasoner(script), tools, clock=clock, settings=settings)
    clock.advance(30)
    resumed = resume(waiting.episode, [Observation("thread", True, "alice: 我回来了")], clock.now())
    messages = episode_messages(resumed)
    assert [m["role"] for m in messages] == ["assistant", "tool", "system", "assistant", "tool"]
    assert messages[0]["tool_calls"][0]["id"] == messages[1]["tool_call_id"] == "abc"
    assert messages[1]["content"] == "pong"
    assert "nonsense" in messages[2]["content"]
    wait_call = messages[3]["tool_calls"][0]
    assert wait_call["function"]["name"] == "wait"
    assert json.loads(wait_call["function"]["arguments"]) == {"seconds": 30, "reason": "later"}
    assert messages[4]["tool_call_id"] == wait_call["id"]
    assert "我回来了" in messages[4]["content"]
