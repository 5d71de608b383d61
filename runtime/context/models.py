"""The model-facing plugs of the Context Runtime: a handoff :class:`Summarizer` and an :class:`Embedder`
over the runtime's model router (``runtime.llm.router.ModelRouter``, or anything with its ``chat`` and
``embed``), so this package needs no import of the model client.

:class:`ModelSummarizer` asks the compression role for design/000 §9.5's JSON and validates it; any
failure (no answer, not JSON, no summary) raises, and the HandoffManager then writes its deterministic
digest instead. :class:`ModelEmbedder` returns the embedding role's vectors in order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from runtime.context.handoffs import HandoffDigest, HandoffRequest, parse_digest

__all__ = ["HANDOFF_INSTRUCTIONS", "ModelEmbedder", "ModelSummarizer", "handoff_messages"]

HANDOFF_INSTRUCTIONS = (
    "你在为一个即将结束的工作会话写交接（handoff），交给同一话题线程的下一次会话。"
    "不要复述全部历史，只写继续工作真正需要的最少信息：当前进度、未完成事项、风险与不确定性、下一步从哪里接着做。"
    "上一次交接（previous_handoff）里仍未完成的事项要保留。"
    "只输出一个 JSON 对象，不要别的文字，格式："
    '{"summary": "...", "unfinished_items": ["..."], "risks": ["..."], "resume_suggestion": "..."}'
)

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


class _ChatRouter(Protocol):
    async def chat(
        self, messages: Any, *, role: Any = ..., chat_id: str | None = ..., **options: Any
    ) -> Any: ...


class _EmbedRouter(Protocol):
    async def embed(self, texts: Sequence[str]) -> Any: ...


def handoff_messages(request: HandoffRequest) -> list[dict[str, str]]:
    """The compression role's prompt for one handoff."""
    facts: dict[str, Any] = {
        "topic_thread": request.thread_title,
        "close_reason": request.close_reason,
        "recent_dialogue": list(request.dialogue),
        "recent_actions": list(request.actions),
        "open_tasks": list(request.open_tasks),
        "interruptions": list(request.interruptions),
        "resume_point": request.resume_point,
    }
    if request.previous is not None:
        facts["previous_handoff"] = {
            "summary": request.previous.summary,
            "unfinished_items": list(request.previous.unfinished_items),
            "resume_suggestion": request.previous.resume_suggestion,
        }
    return [
        {"role": "system", "content": HANDOFF_INSTRUCTIONS},
        {"role": "user", "content": json.dumps(facts, ensure_ascii=False, indent=1)},
    ]


class ModelSummarizer:
    """Handoff digests from the model's compression role."""

    def __init__(self, router: _ChatRouter, *, max_tokens: int = 600) -> None:
        self._router = router
        self._max_tokens = max_tokens

    async def summarize_handoff(self, request: HandoffRequest) -> HandoffDigest:
        result = await self._router.chat(
            handoff_messages(request),
            role="compression",
            chat_id=request.chat_id,
            temperature=0.2,
            max_tokens=self._max_tokens,
        )
        text = _FENCE.sub("", str(getattr(result, "text", "") or "").strip())
        data: str | Mapping[str, Any] = text
        return parse_digest(data)


class ModelEmbedder:
    """Vectors from the model's embedding role."""

    def __init__(self, router: _EmbedRouter) -> None:
        self._router = router

    async def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        result = await self._router.embed(list(texts))
        return [tuple(vector) for vector in result.vectors]
