"""Token accounting without a vocabulary: an offline estimate, calibrated by ``usage``, and a daily ledger.

``TokenEstimator`` counts by character class, so it needs no download (tiktoken fetches its
vocabulary at run time and fails offline):

- a CJK character (Han, kana, hangul) costs ``cjk_weight`` tokens, 1.1 by default. BPE vocabularies
  spend between ~0.6 (Qwen, DeepSeek) and ~1.3 (cl100k) tokens per Chinese character; budgets are
  safer overrun on paper than in the request, so the estimate errs high;
- a run of ASCII letters costs one token per four letters (rounded up), a run of digits one per
  three; punctuation and other symbols one each, characters outside the BMP (emoji) two; whitespace
  nothing;
- a message adds ``message_overhead`` (role and separators); a request adds ``reply_priming``, plus
  the tool schemas' JSON. A long text (the persona, the tool schemas' JSON, which come back on every
  request) is counted once and its count kept (a few hundred at most).

Each answer's ``usage.prompt_tokens`` is fed back (``observe``) as the ratio actual / raw estimate for
that model; a running average of it, bounded to [``floor``, ``ceiling``], scales later estimates. The
floor (0.9) keeps a corrected estimate from ever going more than 10% below the raw one.

``TokenLedger`` counts tokens per chat and per day (a day starts at midnight ``utc_offset_hours``
east of UTC) with an optional cap per chat: ``over_cap(chat_id, day)`` means no non-forced reply.
It is pure and synchronous; ``take_dirty()`` hands the changed counts to whoever persists them and
``restore()`` puts persisted counts back.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

__all__ = [
    "EstimatorStatistics",
    "LedgerEntry",
    "LedgerStatistics",
    "ModelCalibration",
    "TokenEstimator",
    "TokenLedger",
]

_RUNS = re.compile(
    r"(?P<cjk>[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff]+)"
    r"|(?P<alpha>[A-Za-z]+)|(?P<digit>[0-9]+)|(?P<space>\s+)|(?P<other>.)",
    re.DOTALL,
)
# Texts at least this long have their counts kept (per estimator), at most this many at once.
_KEEP_FROM_CHARS = 512
_KEEP_COUNTS = 256


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


@dataclass(frozen=True, slots=True)
class ModelCalibration:
    model: str
    factor: float
    samples: int


@dataclass(frozen=True, slots=True)
class EstimatorStatistics:
    calibrations: tuple[ModelCalibration, ...]
    observations: int
    ignored: int


class TokenEstimator:
    """Offline token counts; ``estimate_*`` apply the model's calibration, ``count_*``/``raw_*`` do not."""

    def __init__(
        self,
        *,
        cjk_weight: float = 1.1,
        message_overhead: int = 3,
        reply_priming: int = 3,
        floor: float = 0.9,
        ceiling: float = 3.0,
        smoothing: float = 0.3,
        min_sample_tokens: int = 16,
    ) -> None:
        if not 0.0 < floor <= 1.0 <= ceiling:
            raise ValueError("need 0 < floor <= 1 <= ceiling")
        self.cjk_weight = cjk_weight
        self.message_overhead = message_overhead
        self.reply_priming = reply_priming
        self.floor = floor
        self.ceiling = ceiling
        self.smoothing = smoothing
        self.min_sample_tokens = min_sample_tokens
        self._factors: dict[str, tuple[float, int]] = {}
        self._observations = 0
        # Long texts come back on every request (the persona, the tool schemas): counted once.
        self._counted: dict[str, int] = {}
        self._ignored = 0

    # -- raw counts ----------------------------------------------------------------------------------

    def count_text(self, text: str) -> int:
        if len(text) < _KEEP_FROM_CHARS:
            return self._count(text)
        kept = self._counted.get(text)
        if kept is None:
            if len(self._counted) >= _KEEP_COUNTS:
                self._counted.clear()
            kept = self._counted[text] = self._count(text)
        return kept

    def _count(self, text: str) -> int:
        total = 0.0
        for match in _RUNS.finditer(text):
            kind = match.lastgroup
            size = match.end() - match.start()
            if kind == "cjk":
                total += size * self.cjk_weight
            elif kind == "alpha":
                total += math.ceil(size / 4)
            elif kind == "digit":
                total += math.ceil(size / 3)
            elif kind == "other":
                total += 2 if ord(match.group()) > 0xFFFF else 1
        return math.ceil(total)

    def raw_messages(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> int:
        total = self.reply_priming
        for message in messages:
            total += self.message_overhead + self.count_text(_content_text(message.get("content")))
            name = message.get("name")
            if name:
                total += self.count_text(str(name))
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                total += self.count_text(str(function.get("name", "")))
                total += self.count_text(str(function.get("arguments", "")))
        if tools:
            total += self.count_text(json.dumps(list(tools), ensure_ascii=False))
        return total

    # -- calibrated estimates ----------------------------------------------------------------------

    def correction(self, model: str | None) -> float:
        if model is None:
            return 1.0
        return self._factors.get(model, (1.0, 0))[0]

    def estimate_text(self, text: str, *, model: str | None = None) -> int:
        return math.ceil(self.count_text(text) * self.correction(model))

    def estimate_messages(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        model: str | None = None,
    ) -> int:
        return math.ceil(self.raw_messages(messages, tools) * self.correction(model))

    def observe(self, model: str, raw_estimate: int, actual: int) -> float:
        """Fold one answer's ``usage.prompt_tokens`` into the model's factor; returns the new factor."""
        factor, samples = self._factors.get(model, (1.0, 0))
        if raw_estimate < self.min_sample_tokens or actual <= 0:
            # Tiny prompts are mostly overhead; their ratio says little about the text.
            self._ignored += 1
            return factor
        ratio = actual / raw_estimate
        updated = ratio if samples == 0 else factor + self.smoothing * (ratio - factor)
        updated = min(self.ceiling, max(self.floor, updated))
        self._factors[model] = (updated, samples + 1)
        self._observations += 1
        return updated

    def restore(self, calibrations: Iterable[ModelCalibration]) -> None:
        for item in calibrations:
            factor = min(self.ceiling, max(self.floor, item.factor))
            self._factors[item.model] = (factor, item.samples)

    def statistics(self) -> EstimatorStatistics:
        calibrations = tuple(
            ModelCalibration(model, factor, samples)
            for model, (factor, samples) in sorted(self._factors.items())
        )
        return EstimatorStatistics(calibrations, self._observations, self._ignored)


# -- the ledger --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    chat_id: str
    day: str  # YYYY-MM-DD in the ledger's time zone
    prompt_tokens: int
    completion_tokens: int
    calls: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class LedgerStatistics:
    chats: int
    days: int
    entries: int
    total_tokens: int
    over_cap: int  # (chat, day) pairs at or over the cap
    daily_cap_per_chat: int
    dirty: int


class TokenLedger:
    """Tokens per (chat, day); ``daily_cap_per_chat`` 0 means no cap."""

    def __init__(
        self, *, daily_cap_per_chat: int = 0, utc_offset_hours: float = 8.0, keep_days: int = 62
    ) -> None:
        if daily_cap_per_chat < 0 or keep_days < 1:
            raise ValueError("daily_cap_per_chat must be >= 0 and keep_days >= 1")
        self.daily_cap_per_chat = daily_cap_per_chat
        self.keep_days = keep_days
        self._zone = timezone(timedelta(hours=utc_offset_hours))
        self._entries: dict[tuple[str, str], LedgerEntry] = {}
        self._dirty: set[tuple[str, str]] = set()

    def day_of(self, now: float) -> str:
        return datetime.fromtimestamp(now, UTC).astimezone(self._zone).date().isoformat()

    def record(
        self, chat_id: str, day: str, *, prompt_tokens: int, completion_tokens: int = 0
    ) -> LedgerEntry:
        key = (chat_id, day)
        old = self._entries.get(key) or LedgerEntry(chat_id, day, 0, 0, 0)
        entry = LedgerEntry(
            chat_id,
            day,
            old.prompt_tokens + max(0, prompt_tokens),
            old.completion_tokens + max(0, completion_tokens),
            old.calls + 1,
        )
        self._entries[key] = entry
        self._dirty.add(key)
        return entry

    def used(self, chat_id: str, day: str) -> int:
        entry = self._entries.get((chat_id, day))
        return entry.total if entry else 0

    def remaining(self, chat_id: str, day: str) -> int | None:
        """Tokens left today, or ``None`` when there is no cap."""
        if not self.daily_cap_per_chat:
            return None
        return max(0, self.daily_cap_per_chat - self.used(chat_id, day))

    def over_cap(self, chat_id: str, day: str) -> bool:
        """True when the chat has spent its day's cap: only forced replies may still call the model."""
        return bool(self.daily_cap_per_chat) and self.used(chat_id, day) >= self.daily_cap_per_chat

    def day_total(self, day: str) -> int:
        return sum(entry.total for (_, d), entry in self._entries.items() if d == day)

    def entry(self, chat_id: str, day: str) -> LedgerEntry | None:
        return self._entries.get((chat_id, day))

    def snapshot(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries[key] for key in sorted(self._entries))

    def take_dirty(self) -> tuple[LedgerEntry, ...]:
        """Entries changed since the last call (to persist), in key order."""
        keys = sorted(self._dirty)
        self._dirty.clear()
        return tuple(self._entries[key] for key in keys if key in self._entries)

    def restore(self, entries: Iterable[LedgerEntry]) -> None:
        """Put persisted counts back (they replace what is held for the same chat and day)."""
        for entry in entries:
            self._entries[(entry.chat_id, entry.day)] = entry

    def prune(self, today: str) -> int:
        """Forget days more than ``keep_days`` before ``today``; returns how many entries went."""
        oldest = (datetime.fromisoformat(today) - timedelta(days=self.keep_days)).date().isoformat()
        stale = [key for key in self._entries if key[1] < oldest]
        for key in stale:
            del self._entries[key]
            self._dirty.discard(key)
        return len(stale)

    def statistics(self) -> LedgerStatistics:
        cap = self.daily_cap_per_chat
        return LedgerStatistics(
            chats=len({chat for chat, _ in self._entries}),
            days=len({day for _, day in self._entries}),
            entries=len(self._entries),
            total_tokens=sum(entry.total for entry in self._entries.values()),
            over_cap=sum(1 for entry in self._entries.values() if cap and entry.total >= cap),
            daily_cap_per_chat=cap,
            dirty=len(self._dirty),
        )
