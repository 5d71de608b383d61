"""What a reasoner may decide in one step (design/0002 §9), and the parser that turns raw model output
into one of them.

The parser never raises: input it cannot read becomes :class:`Malformed`, which the loop records as
a failed step with the problem spelled out, so the model can correct itself on the next step (and
the consecutive-failure guard ends the episode if it cannot).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class Reply:
    """Say ``text`` in the chat; the episode is done. ``quote``: the id of the message it answers
    (quoted in a group), when the reasoner names one; the loop refuses one it may not quote."""

    type: ClassVar[str] = "reply"
    text: str
    quote: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "text": self.text}
        if self.quote is not None:
            out["quote"] = self.quote
        return out


@dataclass(frozen=True, slots=True)
class Wait:
    """Come back in ``seconds`` with whatever happened in the thread meanwhile."""

    type: ClassVar[str] = "wait"
    seconds: float
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "seconds": self.seconds, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Observe:
    """Stay silent and keep listening; the episode is done."""

    type: ClassVar[str] = "observe"
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Expire:
    """The moment has passed; drop the episode."""

    type: ClassVar[str] = "expire"
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """Call a registered tool; its result comes back as the step's observation."""

    type: ClassVar[str] = "tool"
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    call_id: str | None = None

    def key(self) -> tuple[str, str]:
        """Identity of the call for the repeated-call guard: name and canonical arguments."""
        return self.name, json.dumps(self.args, sort_keys=True, ensure_ascii=False, default=str)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "tool": self.name, "args": dict(self.args)}
        if self.call_id is not None:
            out["call_id"] = self.call_id
        return out


@dataclass(frozen=True, slots=True)
class Malformed:
    """Not an action: what the reasoner produced could not be read. ``problem`` tells it why."""

    type: ClassVar[str] = "malformed"
    problem: str
    raw: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "problem": self.problem, "raw": self.raw}


EpisodeAction = Reply | Wait | Observe | Expire | ToolCall
ParsedAction = EpisodeAction | Malformed

_ACTION_TYPES = (Reply, Wait, Observe, Expire, ToolCall, Malformed)
_RAW_LIMIT = 500


def parse_action(raw: object) -> ParsedAction:
    """An action from a reasoner's output: an action value, or a dict shaped like design/0002 §9
    (``{"type": "reply", "text": ...}``, ``{"type": "tool", "tool": name, "args": {...}}``, ...)."""
    if isinstance(raw, _ACTION_TYPES):
        return raw
    if not isinstance(raw, Mapping):
        return Malformed(f"expected an action object, got {type(raw).__name__}", _show(raw))
    kind = raw.get("type")
    shown = _show(raw)
    match kind:
        case "reply":
            text = raw.get("text")
            if not isinstance(text, str) or not text.strip():
                return Malformed('reply needs a non-empty "text" string', shown)
            quote = raw.get("quote", raw.get("reply_to"))
            if quote is None or quote == "":
                return Reply(text)
            if isinstance(quote, bool) or not isinstance(quote, str | int):
                return Malformed('reply "quote" must be a message id such as "#12345"', shown)
            quote = str(quote).strip().lstrip("#").strip()
            return Reply(text, quote or None)
        case "wait":
            seconds = raw.get("seconds")
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
                return Malformed('wait needs "seconds", a positive number', shown)
            return Wait(float(seconds), _reason(raw))
        case "observe":
            return Observe(_reason(raw))
        case "expire":
            return Expire(_reason(raw))
        case "tool":
            name = raw.get("tool", raw.get("name"))
            if not isinstance(name, str) or not name:
                return Malformed('tool needs "tool", the name of a tool', shown)
            args = raw.get("args", raw.get("arguments", {}))
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except json.JSONDecodeError as exc:
                    return Malformed(f"arguments of {name} are not valid JSON ({exc.msg})", shown)
            if args is None:
                args = {}
            if not isinstance(args, Mapping):
                return Malformed(f"arguments of {name} must be a JSON object", shown)
            call_id = raw.get("call_id")
            return ToolCall(name, dict(args), call_id if isinstance(call_id, str) else None)
        case "malformed":
            return Malformed(str(raw.get("problem", "")), str(raw.get("raw", "")))
    return Malformed(f"unknown action type {kind!r}; use reply, wait, observe, expire or tool", shown)


def _reason(raw: Mapping[str, Any]) -> str:
    reason = raw.get("reason", "")
    return reason if isinstance(reason, str) else str(reason)


def _show(raw: object) -> str:
    try:
        text = json.dumps(raw, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(raw)
    return text if len(text) <= _RAW_LIMIT else text[:_RAW_LIMIT] + "…"
