"""The ``compressed.json`` of design/001: the rolling summary's schema, parsing a model's answer, trimming.

::

    {
      "version": 3,
      "last_compressed_at": "2026-03-11T19:00:00+08:00",
      "total_rounds_processed": 47,
      "covered_until": 1773226800.0,
      "summary": {
        "requirements": [...], "confirmed_decisions": [...],
        "user_preferences": {"communication_style": ..., "design_preference": ..., "tech_level": ...},
        "open_questions": [...],
        "emotional_signals": {"overall": "积极/消极/中性", "last_mood": "..."}
      }
    }

``version`` counts the summary's revisions: each compression folds the previous summary into a new
one and adds one (0: nothing compressed yet). ``covered_until`` is the one field beyond design/001's:
the time of the newest message the summary has folded in, so the next compression sends only what
came after it (even across a restart).

A model's answer is untrusted text: :func:`parse_summary_answer` accepts a bare body or a whole
document (also under a wrapping key, or beside other keys), inside a code fence or prose, ignores keys
the schema does not know, drops a section it cannot read and keeps the others, coerces a lone string to
a one-item list, drops empty items and duplicates, clips overlong items, and raises
:class:`InvalidSummaryError` only when no readable section is there at all. A refused answer is retried
with backoff, holding the conversation's later compressions back, so refusing is kept for nothing usable.
:func:`trim_summary` keeps the rendered memory layer within a token budget by dropping items from the
lowest-priority section first — the same order the PromptAssembler trims in, measured with the same
rendering.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from runtime.config.memory_injection import SUMMARY_SECTIONS
from runtime.context.packet import MemorySummarySlot
from runtime.context.render import render_memory_summary
from runtime.memory.errors import InvalidSummaryError

__all__ = [
    "ITEM_MAX_CHARS",
    "SECTION_MAX_ITEMS",
    "CompressedSummary",
    "EmotionalSignals",
    "SummaryBody",
    "UserPreferences",
    "iso_time",
    "parse_summary_answer",
    "summary_slot",
    "summary_tokens",
    "trim_summary",
]

#: A single remembered item longer than this is clipped: a summary line, not a transcript.
ITEM_MAX_CHARS = 300
#: Items a list section keeps from one answer (a model that echoes the transcript cannot flood the layer).
SECTION_MAX_ITEMS = 64
_MAX_PREFERENCES = 32


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ITEM_MAX_CHARS else text[: ITEM_MAX_CHARS - 1] + "…"


def _string_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | int | float):
        value = [value]
    if not isinstance(value, list | tuple):
        raise ValueError("expected a list of strings")
    seen: dict[str, None] = {}
    for item in value:
        if isinstance(item, Mapping | list | tuple):
            item = json.dumps(item, ensure_ascii=False)
        text = _clip(str(item))
        if text:
            seen.setdefault(text, None)
    return list(seen)[:SECTION_MAX_ITEMS]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class UserPreferences(_Model):
    """The three named preferences of design/001; other string-valued preferences are kept as extras."""

    model_config = ConfigDict(frozen=True, extra="allow")

    communication_style: str = ""
    design_preference: str = ""
    tech_level: str = ""

    @model_validator(mode="before")
    @classmethod
    def _strings(cls, data: Any) -> Any:
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            raise ValueError("user_preferences must be an object of strings")
        kept: dict[str, str] = {}
        for key, value in list(data.items())[:_MAX_PREFERENCES]:
            if value is None or isinstance(value, Mapping):
                continue
            joined = "、".join(_string_list(value)) if isinstance(value, list | tuple) else str(value)
            text = _clip(joined)  # clipped once joined: the stored form reads back the same
            name = str(key).strip()[:64]
            if name and text:
                kept[name] = text
        return kept

    def items(self) -> dict[str, str]:
        """Every non-empty preference, the named ones first."""
        named = {
            "communication_style": self.communication_style,
            "design_preference": self.design_preference,
            "tech_level": self.tech_level,
        }
        extra = {str(k): str(v) for k, v in (self.model_extra or {}).items()}
        return {k: v for k, v in {**named, **extra}.items() if v}


class EmotionalSignals(_Model):
    overall: str = "中性"
    last_mood: str = ""

    @field_validator("overall", "last_mood", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else _clip(str(value))


class SummaryBody(_Model):
    requirements: tuple[str, ...] = ()
    confirmed_decisions: tuple[str, ...] = ()
    user_preferences: UserPreferences = UserPreferences()
    open_questions: tuple[str, ...] = ()
    emotional_signals: EmotionalSignals = EmotionalSignals()

    @field_validator("requirements", "confirmed_decisions", "open_questions", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> list[str]:
        return _string_list(value)

    def is_empty(self) -> bool:
        return not (
            self.requirements
            or self.confirmed_decisions
            or self.open_questions
            or self.user_preferences.items()
            or self.emotional_signals.last_mood
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "requirements": list(self.requirements),
            "confirmed_decisions": list(self.confirmed_decisions),
            "user_preferences": self.user_preferences.items(),
            "open_questions": list(self.open_questions),
            "emotional_signals": {
                "overall": self.emotional_signals.overall,
                "last_mood": self.emotional_signals.last_mood,
            },
        }


class CompressedSummary(_Model):
    """The whole document, as stored in the ``memory_summaries`` table and exported as compressed.json."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(default=0, ge=0)
    last_compressed_at: str | None = None
    total_rounds_processed: int = Field(default=0, ge=0)
    covered_until: float | None = None
    summary: SummaryBody = SummaryBody()

    @field_validator("last_compressed_at")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            datetime.fromisoformat(value)  # raises ValueError on anything but ISO 8601
        return value

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "last_compressed_at": self.last_compressed_at,
            "total_rounds_processed": self.total_rounds_processed,
            "covered_until": self.covered_until,
            "summary": self.summary.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompressedSummary:
        return cls.model_validate(dict(data))


def iso_time(seconds: float, utc_offset_hours: float = 8.0) -> str:
    """Seconds since the epoch as ISO 8601 with the given offset (design/001 writes +08:00)."""
    zone = UTC if utc_offset_hours == 0 else timezone(timedelta(hours=utc_offset_hours))
    return datetime.fromtimestamp(seconds, zone).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- parsing model answers

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_DECODER = json.JSONDecoder()
# How deep a body may sit inside wrappers ({"summary": ...}, {"compressed": {"summary": ...}}).
_MAX_DEPTH = 3


def _json_objects(text: str) -> list[Any]:
    """Every JSON object found in ``text``: fenced blocks first, then each object standing in the prose."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    found = []
    for candidate in candidates:
        try:
            found.append(json.loads(candidate))
        except json.JSONDecodeError:
            continue
    at = text.find("{")
    while at != -1:  # prose with several objects (an example, then the answer): each one on its own
        try:
            obj, stop = _DECODER.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
            continue
        found.append(obj)
        at = text.find("{", stop)
    return [obj for obj in found if isinstance(obj, dict)]


def _bodies(obj: Mapping[str, Any], depth: int = 0) -> list[Mapping[str, Any]]:
    """The candidate bodies in ``obj``: the object itself when it holds a section, and what its keys wrap.

    The document of design/001 (``{"version": ..., "summary": {...}}``), a bare body, and a body beside or
    under keys the schema does not know are all the summary's shape.
    """
    found: list[Mapping[str, Any]] = []
    if set(obj) & set(SUMMARY_SECTIONS):
        found.append(obj)
    if depth < _MAX_DEPTH:
        wrapped = obj.get("summary")
        inner = [wrapped] if isinstance(wrapped, Mapping) else []
        inner += [v for k, v in obj.items() if k != "summary" and k not in SUMMARY_SECTIONS]
        for value in inner:
            if isinstance(value, Mapping):
                found.extend(_bodies(value, depth + 1))
    if depth == 0 and isinstance(obj.get("summary"), Mapping):
        found.sort(key=lambda body: body is obj)  # the document's own body before a bare look-alike
    return found


def _validate(body: Mapping[str, Any]) -> tuple[SummaryBody, list[str]]:
    """``body``'s known sections, each validated on its own: one malformed section does not cost the rest."""
    kept: dict[str, Any] = {}
    problems: list[str] = []
    for name in SUMMARY_SECTIONS:
        if name not in body:
            continue
        try:
            SummaryBody.model_validate({name: body[name]})
        except ValidationError as exc:
            problems.append(f"{name}: {exc.errors()[0]['msg']}")
            continue
        kept[name] = body[name]
    return SummaryBody.model_validate(kept), problems


def parse_summary_answer(text: str) -> SummaryBody:
    """The summary body in a compression model's answer; :class:`InvalidSummaryError` if there is none.

    Unknown keys are ignored, at the top and inside the body; a section whose value cannot be read is
    dropped and the others kept. Only an answer with no readable section anywhere is refused.
    """
    if not text or not text.strip():
        raise InvalidSummaryError("the compression model answered nothing")
    objects = _json_objects(text)
    if not objects:
        raise InvalidSummaryError(f"no JSON object in the answer: {text[:120]!r}")
    problems: list[str] = []
    best: tuple[int, SummaryBody] | None = None
    for obj in objects:
        for body in _bodies(obj):
            parsed, bad = _validate(body)
            if len(bad) == len(set(body) & set(SUMMARY_SECTIONS)):
                problems.extend(bad)
                continue
            # An answer may quote the format before giving itself: the fullest body is the answer.
            filled = sum(1 for name in SUMMARY_SECTIONS if _filled(parsed, name))
            if best is None or filled > best[0]:
                best = (filled, parsed)
    if best is not None:
        return best[1]
    if not problems:
        problems.append("no summary section in the answer")
    raise InvalidSummaryError("; ".join(dict.fromkeys(problems)))


def _filled(body: SummaryBody, name: str) -> bool:
    if name == "user_preferences":
        return bool(body.user_preferences.items())
    if name == "emotional_signals":
        return bool(body.emotional_signals.last_mood)
    return bool(getattr(body, name))


# --------------------------------------------------------------------------- the memory layer


def summary_slot(document: CompressedSummary, priority: Sequence[str]) -> MemorySummarySlot:
    """The PromptAssembler's memory-summary slot for a document, sections in ``priority`` order."""
    return MemorySummarySlot.from_summary(document.to_json(), tuple(priority))


def summary_tokens(body: SummaryBody, priority: Sequence[str], count: Callable[[str], int]) -> int:
    """What the body costs once rendered as the memory layer (0 when nothing would be rendered)."""
    slot = MemorySummarySlot.from_summary({"summary": body.to_json()}, tuple(priority))
    return count(render_memory_summary(slot)) if slot.sections else 0


def _drop_one(body: SummaryBody, order: Sequence[str]) -> SummaryBody | None:
    """``body`` less its lowest-priority item (the last item of the last non-empty section)."""
    for name in reversed(order):
        if name == "user_preferences":
            prefs = body.user_preferences.items()
            if prefs:
                prefs.pop(next(reversed(prefs)))
                return body.model_copy(update={"user_preferences": UserPreferences.model_validate(prefs)})
        elif name == "emotional_signals":
            signals = body.emotional_signals
            if signals.last_mood or signals.overall:
                kept = EmotionalSignals(overall=signals.overall if signals.last_mood else "", last_mood="")
                return body.model_copy(update={"emotional_signals": kept})
        else:
            items: tuple[str, ...] = getattr(body, name)
            if items:
                return body.model_copy(update={name: items[:-1]})
    return None


def trim_summary(
    body: SummaryBody, max_tokens: int, priority: Sequence[str], count: Callable[[str], int]
) -> tuple[SummaryBody, int]:
    """``body`` within ``max_tokens`` once rendered; returns it and the number of items dropped.

    Sections leave in reverse ``priority`` order (sections ``priority`` does not list go first), each
    losing its newest-listed items first.
    """
    order = [*priority, *(name for name in SUMMARY_SECTIONS if name not in priority)]
    dropped = 0
    while summary_tokens(body, priority, count) > max_tokens:
        smaller = _drop_one(body, order)
        if smaller is None:
            break
        body = smaller
        dropped += 1
    return body, dropped
