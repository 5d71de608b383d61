"""When to compress (design/001 ④ "refresh"): pure functions over persisted counters.

A compression is *due* while the rounds since the last successful compression reach
``every_n_rounds`` (10) or the conversation tokens since then reach ``token_threshold`` (50,000); at a
session start, any uncompressed round makes it due when ``force_on_session_start`` is set. Nothing
here reads a clock or stores anything: the injector keeps :class:`Counters` in the
``memory_summaries`` row, writes them after every round, and resets them only when a new summary is
stored (:func:`after_compression`, in the same write). So a restart reads back exactly where it was —
it cannot fire a second time for rounds already compressed, nor skip a compression that was due.

"Tokens" are the conversation's own tokens (the rounds' text), not the prompts sent: a prompt carries
the window and the summary again every turn, so counting it would fire on every few rounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "Counters",
    "TriggerCheck",
    "TriggerReason",
    "TriggerSettings",
    "after_compression",
    "due_reason",
    "note_round",
    "note_session_start",
]


class TriggerReason(StrEnum):
    ROUNDS = "every_n_rounds"
    TOKENS = "token_threshold"
    SESSION_START = "force_on_session_start"


@dataclass(frozen=True, slots=True)
class TriggerSettings:
    every_n_rounds: int = 10
    token_threshold: int = 50_000
    force_on_session_start: bool = True

    def __post_init__(self) -> None:
        if self.every_n_rounds < 1 or self.token_threshold < 1:
            raise ValueError("every_n_rounds and token_threshold must be at least 1")

    @classmethod
    def from_config(cls, trigger: Any) -> TriggerSettings:
        """From ``[memory_injection.compression_trigger]`` (any object with its field names)."""
        return cls(
            every_n_rounds=trigger.every_n_rounds,
            token_threshold=trigger.token_threshold,
            force_on_session_start=trigger.force_on_session_start,
        )


@dataclass(frozen=True, slots=True)
class Counters:
    """``rounds_processed``: every round ever noted; the others: since the last stored summary."""

    rounds_processed: int = 0
    rounds_since: int = 0
    tokens_since: int = 0


@dataclass(frozen=True, slots=True)
class TriggerCheck:
    """The counters after an observation and whether a compression is due (and why)."""

    counters: Counters
    reason: TriggerReason | None

    @property
    def due(self) -> bool:
        return self.reason is not None


def due_reason(counters: Counters, settings: TriggerSettings) -> TriggerReason | None:
    """Why a compression is due on these counters alone, or ``None``."""
    if counters.rounds_since >= settings.every_n_rounds:
        return TriggerReason.ROUNDS
    if counters.tokens_since >= settings.token_threshold:
        return TriggerReason.TOKENS
    return None


def note_round(counters: Counters, tokens: int, settings: TriggerSettings) -> TriggerCheck:
    """One more round of ``tokens`` conversation tokens."""
    if tokens < 0:
        raise ValueError(f"a round cannot have {tokens} tokens")
    after = Counters(
        rounds_processed=counters.rounds_processed + 1,
        rounds_since=counters.rounds_since + 1,
        tokens_since=counters.tokens_since + tokens,
    )
    return TriggerCheck(after, due_reason(after, settings))


def note_session_start(counters: Counters, settings: TriggerSettings) -> TriggerCheck:
    """A session starts: due if already due, or forced when there is anything uncompressed."""
    reason = due_reason(counters, settings)
    if reason is None and settings.force_on_session_start and counters.rounds_since > 0:
        reason = TriggerReason.SESSION_START
    return TriggerCheck(counters, reason)


def after_compression(current: Counters, covered: Counters) -> Counters:
    """The counters once a summary covering ``covered`` (a snapshot taken when the compression began)
    is stored; rounds noted while the model was working stay counted for the next one."""
    return Counters(
        rounds_processed=current.rounds_processed,
        rounds_since=max(0, current.rounds_since - covered.rounds_since),
        tokens_since=max(0, current.tokens_since - covered.tokens_since),
    )
