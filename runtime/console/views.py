"""The runtime's values as the console's JSON: an ingest result with its reasons in both languages,
a reply, and any frozen statistics dataclass.

The reasons are the kernel's codes (English, as the kernel wrote them) beside their Chinese phrases
from :mod:`runtime.app.reasons_zh`, the same words ``/why`` says; the page shows one or the other.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping
from typing import Any

from runtime.app.reasons_zh import action_zh, decision_zh, reason_zh, state_zh
from runtime.kernel.events import BotEvent
from runtime.kernel.outcomes import IngestResult
from runtime.ports import SentRecord

__all__ = ["event_state", "plain", "reply_view", "result_view"]


def plain(value: Any) -> Any:
    """A dataclass, enum, mapping or sequence as JSON-able values (non-finite floats as None)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def event_state(event: BotEvent) -> dict[str, Any]:
    skip = event.payload.get("skip_reason")
    return {
        "event_id": event.id,
        "state": event.state.value,
        "state_zh": state_zh(event.state.value),
        "skip_reason": str(skip) if skip else None,
        "skip_reason_zh": reason_zh(str(skip)) if skip else None,
    }


def result_view(result: IngestResult, event: BotEvent | None = None) -> dict[str, Any]:
    """One message with the kernel's decision on it; ``event`` the activation's current state."""
    message = result.message
    attention = result.attention
    return {
        "kind": "message",
        "chat_id": message.chat_id,
        "message_id": message.message_id,
        "sender_id": message.sender_id,
        "sender_name": message.sender_name,
        "time": message.time,
        "text": message.text,
        "addressed": message.addressed,
        "thread_id": result.thread.thread.id,
        "score": round(attention.score, 4),
        "decision": attention.decision.value,
        "decision_zh": decision_zh(attention.decision.value),
        "reasons": list(attention.reasons),
        "reasons_zh": [reason_zh(code) for code in attention.reasons],
        "action": result.action.value,
        "action_zh": action_zh(result.action.value),
        "reason": result.reason,
        "reason_zh": reason_zh(result.reason),
        "activate_at": result.activate_at,
        "keywords": list(dict.fromkeys(hit.term for hit in result.keyword_hits)),
        **event_state(event or result.event),
    }


def reply_view(record: SentRecord) -> dict[str, Any]:
    return {
        "kind": "reply",
        "chat_id": record.chat_id,
        "text": record.text,
        "time": record.time,
        "reply_to": record.reply_to,
        "message_id": record.message_id,
        "shadow": record.shadow,
    }
