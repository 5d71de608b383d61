"""The handoff :class:`~runtime.context.handoffs.Summarizer` over the router's compression role.

A session closed for idleness gets its handoff written by the model: the session's record goes in,
design/000 §9.5's JSON comes out (:func:`~runtime.context.handoffs.parse_digest`). Anything unusable
raises, and the HandoffManager falls back to its deterministic digest; a shutdown never waits for it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from runtime.context.handoffs import HandoffDigest, HandoffRequest, parse_digest
from runtime.llm.types import ChatResult

__all__ = ["RouterSummarizer"]

PROMPT = (
    "你在为一段即将结束的工作会话写交接，让下一段会话能接着做。只输出一个 JSON 对象，字段："
    "summary（进度，一两句），unfinished_items（未完成的事，列表），risks（风险，列表），"
    "resume_suggestion（从哪里接着做，一句）。不要输出别的。"
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")
MAX_TOKENS = 600


class _Compressor(Protocol):
    async def chat(
        self, messages: Any, *, role: Any = ..., chat_id: str | None = ..., max_tokens: int | None = ...
    ) -> ChatResult: ...


class RouterSummarizer:
    def __init__(self, router: _Compressor) -> None:
        self._router = router

    async def summarize_handoff(self, request: HandoffRequest) -> HandoffDigest:
        record = {
            "thread": request.thread_title,
            "dialogue": list(request.dialogue),
            "actions": list(request.actions),
            "open_tasks": list(request.open_tasks),
            "interruptions": list(request.interruptions),
            "resume_point": request.resume_point,
            "close_reason": request.close_reason,
        }
        result = await self._router.chat(
            [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": json.dumps(record, ensure_ascii=False)},
            ],
            role="compression",
            chat_id=request.chat_id,
            max_tokens=MAX_TOKENS,
        )
        return parse_digest(_FENCE.sub("", result.text.strip()))
