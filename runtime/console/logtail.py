"""The console's log tail: the last lines of the process's log in a ring buffer, fed by
``runtime.logs.add_log_tap`` (after the redactor, so masked), numbered so a page asks only for what is
new. Bounded however loud the bot is."""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Mapping
from typing import Any

__all__ = ["KEPT", "LEVELS", "LogTail"]

KEPT = 2_000
SHOWN = 500
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
_FIELD_CHARS = 400


class LogTail:
    """The last :data:`KEPT` log lines, numbered."""

    def __init__(self, kept: int = KEPT) -> None:
        self._lines: deque[dict[str, Any]] = deque(maxlen=kept)
        self._seq = itertools.count(1)

    def __call__(self, fields: Mapping[str, Any]) -> None:
        rest = {k: v for k, v in fields.items() if k not in ("event", "level", "timestamp", "chat_id")}
        text = json.dumps(rest, ensure_ascii=False, default=str)
        self._lines.append(
            {
                "seq": next(self._seq),
                "time": str(fields.get("timestamp", "")),
                "level": str(fields.get("level", "info")),
                "event": str(fields.get("event", ""))[:_FIELD_CHARS],
                "chat_id": str(fields["chat_id"]) if fields.get("chat_id") else None,
                "fields": text if len(text) <= _FIELD_CHARS else text[: _FIELD_CHARS - 1] + "…",
            }
        )

    def since(self, after: int, *, level: str, chat: str | None) -> list[dict[str, Any]]:
        floor = LEVELS.get(level, 20)
        found = [
            line
            for line in self._lines
            if line["seq"] > after
            and LEVELS.get(line["level"], 20) >= floor
            and (not chat or (line["chat_id"] or "").find(chat) >= 0)
        ]
        return found[-SHOWN:]
