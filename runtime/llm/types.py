"""What a model call returns, as frozen values, and the wire JSON they are read from.

The pydantic ``Wire*`` models are the boundary: they accept what OpenAI-compatible providers send
(extra fields ignored, ``content`` as a string or a list of parts, tool-call arguments as a JSON
string or, from a few providers, an object). :func:`chat_result_from_wire` turns a validated answer
into a :class:`ChatResult`; nothing past that point sees a dict from the network.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# -- wire (boundary) ---------------------------------------------------------------------------------


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class WireFunction(_Wire):
    name: str
    arguments: str | dict[str, Any] | None = None


class WireToolCall(_Wire):
    id: str | None = None
    type: str | None = "function"
    function: WireFunction


class WireMessage(_Wire):
    role: str | None = "assistant"
    content: str | list[Any] | None = None
    tool_calls: list[WireToolCall] | None = None
    # Reasoning models (DeepSeek-R1 style) return their thinking beside the answer.
    reasoning_content: str | None = None


class WireChoice(_Wire):
    index: int = 0
    message: WireMessage
    finish_reason: str | None = None


class WirePromptDetails(_Wire):
    cached_tokens: int | None = None


class WireUsage(_Wire):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int | None = None
    prompt_tokens_details: WirePromptDetails | None = None


class WireChatCompletion(_Wire):
    id: str | None = None
    model: str | None = None
    choices: list[WireChoice] = Field(min_length=1)
    usage: WireUsage | None = None


class WireEmbedding(_Wire):
    index: int = 0
    embedding: list[float]


class WireEmbeddings(_Wire):
    model: str | None = None
    data: list[WireEmbedding]
    usage: WireUsage | None = None


# -- values (inside) ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cached_tokens: int = 0

    @classmethod
    def from_wire(cls, wire: WireUsage | None) -> Usage | None:
        if wire is None:
            return None
        total = (
            wire.total_tokens
            if wire.total_tokens is not None
            else wire.prompt_tokens + wire.completion_tokens
        )
        cached = wire.prompt_tokens_details.cached_tokens if wire.prompt_tokens_details else None
        return cls(wire.prompt_tokens, wire.completion_tokens, total, cached or 0)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as the model made it. ``arguments`` is ``None`` exactly when ``error`` says why."""

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    error: str | None
    raw: str

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class ChatResult:
    text: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    usage: Usage | None
    model: str
    provider: str
    attempts: int = 1
    latency: float = 0.0
    reasoning: str | None = None

    def assistant_message(self) -> dict[str, Any]:
        """The answer as a chat message, to append to the history before the tool results."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw}}
                for c in self.tool_calls
            ]
        return message


@dataclass(frozen=True, slots=True)
class EmbeddingResult:
    vectors: tuple[tuple[float, ...], ...]
    model: str
    provider: str
    usage: Usage | None
    attempts: int = 1


# -- conversion ----------------------------------------------------------------------------------------


def _text_of(content: str | list[Any] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"
    )


_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)


def split_thinking(text: str) -> tuple[str, str | None]:
    """Separate a leading ``<think>...</think>`` block (some reasoning models put it in ``content``),
    so the thinking never reaches the chat as part of a reply."""
    match = _THINK.match(text)
    if match is None:
        return text, None
    return text[match.end() :], match.group(1).strip()


def parse_tool_call(wire: WireToolCall, index: int) -> ToolCall:
    """Parse one tool call's arguments; a parse failure is kept on the value, not raised."""
    name = wire.function.name
    call_id = wire.id or f"call_{index}"
    arguments = wire.function.arguments
    if isinstance(arguments, dict):
        return ToolCall(
            call_id, name, MappingProxyType(arguments), None, json.dumps(arguments, ensure_ascii=False)
        )
    raw = arguments or ""
    if not raw.strip():  # a tool without parameters is often called with ""
        return ToolCall(call_id, name, MappingProxyType({}), None, raw)
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ToolCall(call_id, name, None, f"arguments are not valid JSON: {exc.msg} at {exc.pos}", raw)
    if not isinstance(parsed, dict):
        return ToolCall(
            call_id, name, None, f"arguments must be a JSON object, got {type(parsed).__name__}", raw
        )
    return ToolCall(call_id, name, MappingProxyType(parsed), None, raw)


def chat_result_from_wire(
    wire: WireChatCompletion, *, provider: str, model: str, attempts: int = 1, latency: float = 0.0
) -> ChatResult:
    choice = wire.choices[0]
    calls = tuple(parse_tool_call(call, i) for i, call in enumerate(choice.message.tool_calls or ()))
    text, thinking = split_thinking(_text_of(choice.message.content))
    return ChatResult(
        text=text,
        tool_calls=calls,
        finish_reason=choice.finish_reason,
        usage=Usage.from_wire(wire.usage),
        model=wire.model or model,
        provider=provider,
        attempts=attempts,
        latency=latency,
        reasoning=choice.message.reasoning_content or thinking,
    )


def embedding_result_from_wire(
    wire: WireEmbeddings, *, provider: str, model: str, expected: int, attempts: int = 1
) -> EmbeddingResult | None:
    """Vectors in input order, or ``None`` when the answer does not hold one per input."""
    ordered = sorted(wire.data, key=lambda item: item.index)
    if len(ordered) != expected:
        return None
    vectors = tuple(tuple(item.embedding) for item in ordered)
    return EmbeddingResult(vectors, wire.model or model, provider, Usage.from_wire(wire.usage), attempts)


Messages = Sequence[Mapping[str, Any]]
