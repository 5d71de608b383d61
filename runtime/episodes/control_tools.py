"""The episode's control actions as OpenAI tools (design/contracts §5), and the mapping both ways.

A model-backed reasoner offers :data:`CONTROL_TOOLS` beside the registered tools' schemas; whatever
the model answers goes through :func:`action_from_tool_call` (a tool call) or
:func:`action_from_text` (plain text with no tool call, which is a reply). The steps taken so far go
back to the model as Chat Completions messages through :func:`episode_messages`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from runtime.episodes.actions import Malformed, ParsedAction, Reply, ToolCall, Wait, parse_action
from runtime.episodes.episode import Episode


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


REPLY_TOOL = _tool(
    "reply",
    "Say something in the chat now. Ends this turn.",
    {
        "text": {
            "type": "string",
            "minLength": 1,
            "description": "The message to send, as you would say it.",
        },
        "quote": {
            "type": "string",
            "description": "Optional: the #id of the message someone else said that you answer (it is "
            "quoted). Never one of your own messages.",
        },
    },
    ["text"],
)
WAIT_TOOL = _tool(
    "wait",
    "Say nothing yet and come back later; you will see what was said in this thread meanwhile.",
    {
        "seconds": {"type": "number", "exclusiveMinimum": 0, "description": "How long to wait, in seconds."},
        "reason": {"type": "string", "description": "What you are waiting for."},
    },
    ["seconds", "reason"],
)
OBSERVE_TOOL = _tool(
    "observe",
    "Stay silent this time and keep listening. Ends this turn.",
    {"reason": {"type": "string", "description": "Why silence is right here."}},
    ["reason"],
)
EXPIRE_TOOL = _tool(
    "expire",
    "Drop this: the moment has passed or it needs nothing from you. Ends this turn.",
    {"reason": {"type": "string", "description": "Why it is dropped."}},
    ["reason"],
)
CONTROL_TOOLS: tuple[dict[str, Any], ...] = (REPLY_TOOL, WAIT_TOOL, OBSERVE_TOOL, EXPIRE_TOOL)
CONTROL_TOOL_NAMES = frozenset({"reply", "wait", "observe", "expire"})


def action_from_tool_call(
    name: str, arguments: str | Mapping[str, Any] | None, call_id: str | None = None
) -> ParsedAction:
    """The action a model's tool call stands for: a control action or a call of a registered tool.

    ``arguments`` is the JSON string the API returns (or an already-parsed object).
    """
    if isinstance(arguments, str):
        try:
            args: object = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return Malformed(f"arguments of {name} are not valid JSON ({exc.msg})", arguments[:500])
    else:
        args = arguments if arguments is not None else {}
    if not isinstance(args, Mapping):
        return Malformed(f"arguments of {name} must be a JSON object", repr(args)[:500])
    if name in CONTROL_TOOL_NAMES:
        return parse_action({**args, "type": name})
    return parse_action({"type": "tool", "tool": name, "args": args, "call_id": call_id})


def action_from_text(text: str | None) -> ParsedAction:
    """A plain answer with no tool call is a reply; an empty one is unreadable."""
    return parse_action({"type": "reply", "text": text or ""})


def episode_messages(episode: Episode) -> list[dict[str, Any]]:
    """The episode's steps as Chat Completions messages, to follow the prompt.

    Each tool call (a registered tool, or a ``wait`` that was refused) is an assistant message with
    one ``tool_calls`` entry followed by the ``tool`` message holding its observation. A ``wait``
    that was taken is answered by the resume step: what happened in the thread meanwhile is the
    result of the wait. An unreadable answer becomes a system note saying what was wrong.
    """
    messages: list[dict[str, Any]] = []
    pending_wait: str | None = None
    for step in episode.steps:
        action, observation = step.action, step.observation
        if action is None:
            if observation is None:
                continue
            if pending_wait is not None:
                messages.append(_tool_result(pending_wait, observation.content))
                pending_wait = None
            else:
                messages.append({"role": "system", "content": observation.content})
            continue
        if isinstance(action, Malformed):
            problem = observation.content if observation is not None else action.problem
            messages.append({"role": "system", "content": f"[your last answer could not be used: {problem}]"})
            continue
        refused_reply = isinstance(action, Reply) and observation is not None
        if not isinstance(action, ToolCall | Wait) and not refused_reply:
            continue  # reply / observe / expire end the run; nothing follows them
        call_id = f"call_{episode.id}_{step.index}"
        if isinstance(action, ToolCall):
            name, args = action.name, dict(action.args)
            call_id = action.call_id or call_id
        elif isinstance(action, Reply):  # a reply the loop refused (its quote): the model hears why
            name, args = "reply", {"text": action.text, "quote": action.quote}
        elif isinstance(action, Wait):
            name, args = "wait", {"seconds": action.seconds, "reason": action.reason}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
                    }
                ],
            }
        )
        if observation is not None:
            messages.append(_tool_result(call_id, observation.content))
        else:
            pending_wait = call_id
    return messages


def _tool_result(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}
