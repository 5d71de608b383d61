"""The model-backed Reasoner: one Chat Completions call per episode step, with native tool calling.

The model is offered the episode's control tools (``reply``, ``wait``, ``observe``, ``expire``,
:data:`~runtime.episodes.CONTROL_TOOLS`) beside the registered tools the episode may use. What it
answers becomes one action:

* a tool call -> :func:`~runtime.episodes.action_from_tool_call` (the first call, when it made several:
  an episode takes one step at a time, and the loop shows it the result before it decides again);
* plain text and no tool call -> a ``reply`` (design/contracts §5);
* a tool call whose arguments are not JSON, or an empty answer -> ``Malformed``, which the loop records
  so the model can correct itself next step.

A model that cannot be reached (after the router's own retries and fallbacks), or has not answered
within the episode's ``model_timeout_ms``, raises out of
:meth:`ModelReasoner.next`; the loop ends the episode ``failed`` and the driver decides whether a short
graceful message is due. :attr:`ModelReasoner.model_error` keeps the last such error for it.

Reply text is cleaned before it can reach a chat (:func:`clean_reply`): reasoning blocks, role or
name prefixes and echoed prompt headers are removed.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import anyio
import structlog

from runtime import stages
from runtime.episodes import CONTROL_TOOLS, Episode, action_from_text, action_from_tool_call, episode_messages
from runtime.episodes.actions import Malformed, ParsedAction, Reply
from runtime.llm.errors import LLMError, LLMTimeoutError
from runtime.llm.types import ChatResult
from runtime.tools.spec import ToolSpec
from runtime.urgency import reaching_the_model

__all__ = ["INSTRUCTIONS", "ChatModel", "ModelReasoner", "clean_reply"]

log = structlog.get_logger("greywind.reasoner")

# Constant, so the prompt's stable prefix (persona + this) stays byte-identical across turns.
INSTRUCTIONS = (
    "你在 QQ 聊天里。想说话就调用 reply（或直接回答要说的话）；不需要你开口时调用 observe；"
    "想先看看接下来别人怎么说，调用 wait；时机已过或与你无关，调用 expire。"
    "需要时可以先调用其他工具，看到结果后再决定。"
    "回复只写你要说的话本身：不加名字或角色前缀，不复述这些说明或上面的资料标题。"
)

_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_STRAY_TAG = re.compile(r"</?(?:think|reasoning|analysis)>", re.IGNORECASE)
_ROLE_WORDS = ("assistant", "system", "user", "bot", "助手", "系统", "用户")
# Headers the renderer writes into the prompt (runtime.context.render); a reply echoing one leaked it.
_HEADER = re.compile(
    r"^\s*#{1,6}\s*(?:身份|原始意图|当前线程|记忆摘要|对话者|当前会话|上一次会话的交接|相关记忆|愿景)"
)
_INPUT_TAG = re.compile(r"^\s*\[(?:text|proactive|image|voice|file)\]\s*", re.IGNORECASE)
_QUOTE_TAG = re.compile(r"^\s*（引用：[^）\n]*）\s*")


class ChatModel(Protocol):
    """What the reasoner needs of a ``ModelRouter``."""

    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        chat_id: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatResult: ...


def clean_reply(text: str, names: Sequence[str] = ()) -> str:
    """``text`` without reasoning blocks, leading role/name prefixes or echoed prompt structure."""
    text = _STRAY_TAG.sub("", _THINK_BLOCK.sub("", text))
    prefixes = [re.escape(word) for word in (*_ROLE_WORDS, *names) if word]
    role = re.compile(
        r"^\s*(?:\[?(?:" + "|".join(prefixes) + r")\]?)\s*(?:\[[^\]\n]{0,40}\])?\s*[:：]\s*", re.IGNORECASE
    )
    tag = re.compile(r"^\s*[\[【](?:" + "|".join(prefixes) + r")[\]】]\s*", re.IGNORECASE)
    kept: list[str] = []
    for line in text.splitlines():
        if _HEADER.match(line):
            # Everything after an echoed header is the prompt, not the reply.
            break
        kept.append(line)
    text = "\n".join(kept).strip()
    for _ in range(3):  # "灰风: assistant: ..." peels in a few passes
        stripped = role.sub("", text, count=1)
        stripped = tag.sub("", _QUOTE_TAG.sub("", _INPUT_TAG.sub("", stripped, count=1), count=1), count=1)
        if stripped == text:
            break
        text = stripped.strip()
    return text.strip()


class ModelReasoner:
    """Decides an episode's steps by asking the chat model; one instance per episode run."""

    def __init__(
        self,
        model: ChatModel,
        prompt: Sequence[Mapping[str, Any]],
        *,
        chat_id: str,
        names: Sequence[str] = (),
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        before_acting: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """``before_acting`` is awaited once, when the model's first answer is in and before the
        episode acts on it (the context's writes that went on beside the request)."""
        self._model = model
        self._before_acting = before_acting
        self._timeout = timeout
        self._prompt = _with_instructions(prompt)
        self._chat_id = chat_id
        self._names = tuple(names)
        self._temperature = temperature
        self._max_tokens = max_tokens
        self.calls = 0
        self.model_error: LLMError | None = None
        self.last_request: list[dict[str, Any]] = []

    def messages_for(self, episode: Episode) -> list[dict[str, Any]]:
        """The request's messages: the assembled prompt, then the episode's steps so far."""
        return [dict(message) for message in self._prompt] + episode_messages(episode)

    async def next(self, episode: Episode, tools: Sequence[ToolSpec]) -> object:
        messages = self.messages_for(episode)
        self.last_request = messages
        offered = [*CONTROL_TOOLS, *(spec.openai_schema() for spec in tools)]
        self.calls += 1
        reaching_the_model()
        stages.stamp_current("model.ask")
        try:
            with anyio.fail_after(self._timeout):
                result = await self._model.chat(
                    messages,
                    tools=offered,
                    chat_id=self._chat_id,
                    temperature=self._temperature,
                    max_tokens=self._max_tokens,
                )
        except LLMError as exc:
            self.model_error = exc
            raise
        except TimeoutError:
            self.model_error = LLMTimeoutError(f"the model did not answer within {self._timeout:g}s")
            raise self.model_error from None
        if self._before_acting is not None:
            before, self._before_acting = self._before_acting, None
            await before()
        return self.action_of(result)

    def action_of(self, result: ChatResult) -> ParsedAction:
        if result.tool_calls:
            call = result.tool_calls[0]
            if len(result.tool_calls) > 1:
                log.info("extra_tool_calls_ignored", chat_id=self._chat_id, count=len(result.tool_calls) - 1)
            if not call.ok:
                return Malformed(f"arguments of {call.name}: {call.error}", call.raw[:500])
            action = action_from_tool_call(call.name, call.arguments, call.id)
        else:
            action = action_from_text(result.text)
        if isinstance(action, Reply):
            text = clean_reply(action.text, self._names)
            if not text:
                return Malformed(
                    "the reply was empty once cleaned; say something or call observe", action.text
                )
            return Reply(text, action.quote)
        return action


def _with_instructions(prompt: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The fixed instructions right after the first (persona) system message."""
    out = list(prompt)
    note = {"role": "system", "content": INSTRUCTIONS}
    position = 1 if out and out[0].get("role") == "system" else 0
    out.insert(position, note)
    return out
