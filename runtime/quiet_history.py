"""The quiet periods as they began and ended, appended to ``quiet_history.jsonl`` in the data directory.

``quiet.json`` holds only the periods in force now; a replay of the stored messages needs the past ones
too, or its would-speak counts run high in chats that were muted. Each change the bot saves appends one
line (``{"chat_id", "at", "until", "kind"}`` when a period begins, ``"until": "lifted"`` when one is
lifted early); append-only, so it survives restarts and a torn last line loses only that line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from runtime.quiet import QuietPeriod

__all__ = ["QUIET_HISTORY_FILE", "QuietTimeline", "append_quiet_changes"]

QUIET_HISTORY_FILE = "quiet_history.jsonl"
_LIFTED = "lifted"


def append_quiet_changes(
    path: Path, before: Mapping[str, QuietPeriod], after: Mapping[str, QuietPeriod], now: float
) -> None:
    """One line per chat whose period began, changed or was lifted between ``before`` and ``after``."""
    rows: list[dict[str, object]] = []
    for chat_id, period in after.items():
        if before.get(chat_id) != period:
            rows.append({"chat_id": chat_id, "at": now, "until": period.until, "kind": period.kind})
    rows.extend({"chat_id": chat_id, "at": now, "until": _LIFTED} for chat_id in before.keys() - after.keys())
    if rows:
        with path.open("a", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


class QuietTimeline:
    """Which chats were quiet when, read back from the history (unreadable lines are skipped)."""

    def __init__(self, periods: Mapping[str, list[tuple[float, float | None]]] | None = None) -> None:
        self._periods = {chat: list(spans) for chat, spans in (periods or {}).items()}

    @classmethod
    def load(cls, path: Path) -> QuietTimeline:
        spans: dict[str, list[tuple[float, float | None]]] = {}
        if not path.is_file():
            return cls()
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
                chat_id, at, until = str(row["chat_id"]), float(row["at"]), row["until"]
            except (ValueError, KeyError, TypeError):
                continue
            chat = spans.setdefault(chat_id, [])
            if chat and (chat[-1][1] is None or chat[-1][1] > at):
                chat[-1] = (chat[-1][0], at)  # a later change ends the period in force
            if until != _LIFTED:
                chat.append((at, None if until is None else float(until)))
        return cls(spans)

    def quiet_at(self, chat_id: str, when: float) -> bool:
        return any(
            start <= when and (end is None or when < end) for start, end in self._periods.get(chat_id, ())
        )

    def periods(self) -> int:
        return sum(len(spans) for spans in self._periods.values())
