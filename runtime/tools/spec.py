"""What a tool is (:class:`ToolSpec`), what it is told (:class:`ToolContext`) and what it gives back
(:class:`ToolResult`).

A tool's arguments are described either by a pydantic model (``args_model``; the tool then receives a
validated instance) or by a plain JSON schema (``parameters``; the tool receives a ``dict`` checked
against the subset of JSON schema in ``runtime.tools._schema``). Either way the registry exports an
OpenAI tool schema for it and rejects bad arguments with a message the model can act on.

A model's JSON schema is generated once per model class and kept as text (pydantic builds it anew on
every ``model_json_schema()`` call, and every model request carries every tool's schema); each caller
gets its own copy, so one that edits it changes nothing for the next.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import Any

from pydantic import BaseModel

from runtime.tools._schema import check_schema
from runtime.tools.errors import ToolSpecError

# The control actions travel as tools with these names (design/contracts §5); nothing else may take them.
RESERVED_TOOL_NAMES = frozenset({"reply", "wait", "observe", "expire"})

# OpenAI function names: letters, digits, underscore and dash, at most 64.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

ToolCallable = Callable[[Any, "ToolContext"], "object | Awaitable[object]"]


class ToolErrorKind(StrEnum):
    UNKNOWN_TOOL = "unknown_tool"
    PERMISSION_DENIED = "permission_denied"
    INVALID_ARGUMENTS = "invalid_arguments"
    TIMEOUT = "timeout"
    EXCEPTION = "exception"


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is calling, from where. Tools see this and their arguments, nothing else.

    ``user_id`` is who the episode began for; ``heard`` the ``(message id, speaker id)`` of every chat
    message the caller has seen, oldest first. In a resumed episode the newest may be someone else's:
    a tool acting on what was said asks ``heard`` who said it.
    """

    chat_id: str
    user_id: str | None = None
    thread_id: str | None = None
    episode_id: str | None = None
    permissions: frozenset[str] = frozenset()
    now: float = 0.0
    heard: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool: its name and description for the model, its arguments, its limits and its code.

    ``permissions`` are all required of the caller. ``timeout`` (seconds) and ``max_result_chars``
    fall back to the registry's defaults when ``None``. ``side_effect`` flags tools that change the
    world (send, write, start a game) so callers and logs can treat them with care.
    """

    name: str
    description: str
    execute: ToolCallable
    args_model: type[BaseModel] | None = None
    parameters: Mapping[str, Any] | None = None
    permissions: frozenset[str] = frozenset()
    timeout: float | None = None
    side_effect: bool = False
    max_result_chars: int | None = None
    tags: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ToolSpecError(f"tool name {self.name!r} must match [A-Za-z0-9_-]{{1,64}}")
        if self.name in RESERVED_TOOL_NAMES:
            raise ToolSpecError(f"tool name {self.name!r} is reserved for episode control actions")
        if not self.description.strip():
            raise ToolSpecError(f"tool {self.name!r} needs a description the model can read")
        if self.args_model is not None and self.parameters is not None:
            raise ToolSpecError(f"tool {self.name!r}: give args_model or parameters, not both")
        if self.parameters is not None:
            problem = check_schema(self.parameters)
            if problem:
                raise ToolSpecError(f"tool {self.name!r}: parameters {problem}")
        if self.timeout is not None and not self.timeout > 0:
            raise ToolSpecError(f"tool {self.name!r}: timeout must be positive")
        if self.max_result_chars is not None and self.max_result_chars < 1:
            raise ToolSpecError(f"tool {self.name!r}: max_result_chars must be at least 1")
        object.__setattr__(self, "permissions", frozenset(self.permissions))

    def json_schema(self) -> dict[str, Any]:
        """The arguments as a JSON schema object (always ``"type": "object"``)."""
        if self.args_model is not None:
            loaded: dict[str, Any] = json.loads(_model_schema(self.args_model))
            return loaded
        if self.parameters is not None:
            return dict(self.parameters)
        return {"type": "object", "properties": {}, "additionalProperties": False}

    def openai_schema(self) -> dict[str, Any]:
        """The Chat Completions ``tools`` entry for this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.json_schema(),
            },
        }


@cache
def _model_schema(model: type[BaseModel]) -> str:
    schema = model.model_json_schema()
    schema.pop("title", None)
    return json.dumps(schema, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one invocation; failures are values with a kind and a message for the model.

    ``content`` is what the tool returned, rendered as text and cut to the cap; when cut,
    ``truncated`` is set and ``full_size`` holds the length before cutting (characters).
    """

    name: str
    ok: bool
    content: str = ""
    error: ToolErrorKind | None = None
    message: str = ""
    truncated: bool = False
    full_size: int = 0
    elapsed: float = 0.0
    side_effect: bool = False

    @classmethod
    def failure(
        cls, name: str, kind: ToolErrorKind, message: str, *, elapsed: float = 0.0, side_effect: bool = False
    ) -> ToolResult:
        return cls(name=name, ok=False, error=kind, message=message, elapsed=elapsed, side_effect=side_effect)

    def observation_text(self) -> str:
        """What the model is shown for this result."""
        if self.ok:
            return self.content
        kind = self.error.value if self.error else "error"
        return f"[{self.name} failed: {kind}] {self.message}"
