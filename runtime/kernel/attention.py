"""Attention: how much a message deserves the bot's voice (design/0002 §8).

``score_attention(inp, weights)`` turns an :class:`AttentionInput` into an :class:`Attention`: a score
in ``[0, 1]``, a :class:`Decision` and human-readable reasons (``"direct +0.45"``,
``"keyword 猫粮 +0.21"``, ``"recently replied -0.20"``). It is a pure function; the Kernel gathers the
inputs.

The inputs, and who decides them:

- ``forced`` — the message is *addressed* to the bot, as the edge judged it: an @ of the bot, a reply
  to one of the bot's messages, the persona's name opening the message, a poke, or any private
  message. Only this yields :attr:`Decision.FORCED`, whatever the score.
- ``direct`` — the message *concerns* the bot without calling it: the persona's name or an alias
  somewhere in the text ("问问灰风吧"), or a reply to a message of a conversation thread the bot takes
  part in. It weighs ``weight_direct`` but never forces.
- ``keyword_score`` in ``[0, 1]`` — from the lexicon. Keywords add ``keyword_score * weight_keyword``
  and never force: a message with nothing but keywords reaches at most ``weight_keyword +
  weight_silence`` (0.35 with the default weights: LOW, or MEDIUM only when it breaks a silence of
  ``silence_full``; never HIGH, never FORCED). A keyword question (0.3 + 0.15) is MEDIUM.
- ``thread_continuity`` in ``[0, 1]`` — how alive the bot's part in this message's conversation
  thread is (1 just after the bot spoke in it, fading to 0 over the thread gap).
- ``question`` — the message asks something (a question mark or a question word).
- ``silence_seconds`` — how quiet the chat was *before* this message. A message breaking a long
  silence is an opening, worth at most ``weight_silence`` once ``silence_full`` seconds have passed.
  Silence itself never wakes the bot: only a message is scored, so a quiet group is never nagged.
- ``recently_replied`` — the bot spoke in this chat lately, outside this message's thread; a penalty.
- ``budget_exhausted`` — the normal speech budget of the chat refuses now; a penalty, so a message
  that would be dropped at activation anyway rarely gets scheduled.

Thresholds: ``score >= high`` → HIGH, ``score >= medium`` → MEDIUM, else LOW.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, overload

from runtime.kernel._build import builder
from runtime.kernel.errors import InvalidSetting

__all__ = ["Attention", "AttentionInput", "AttentionWeights", "Decision", "score_attention"]


class Decision(StrEnum):
    FORCED = "forced"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


@dataclass(frozen=True, slots=True)
class AttentionWeights:
    """Thresholds and weights; built from ``[attention]`` by ``KernelSettings.from_config``."""

    high: float = 0.65
    medium: float = 0.35
    direct: float = 0.45
    question: float = 0.15
    thread: float = 0.25
    keyword: float = 0.3
    silence: float = 0.05
    silence_full: float = 600.0
    recently_replied: float = 0.2
    budget_exhausted: float = 0.3

    def __post_init__(self) -> None:
        if not 0.0 <= self.medium <= self.high <= 1.0:
            raise InvalidSetting("attention.medium/high", "need 0 <= medium <= high <= 1")
        if not self.silence_full > 0:
            raise InvalidSetting("attention.silence_full", "must be > 0 seconds")


@dataclass(frozen=True, slots=True)
class AttentionInput:
    forced: bool = False
    direct: bool = False
    keyword_score: float = 0.0
    thread_continuity: float = 0.0
    question: bool = False
    silence_seconds: float = 0.0
    recently_replied: bool = False
    budget_exhausted: bool = False
    # The matched terms, only to name them in the reasons.
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Attention:
    score: float
    decision: Decision
    reasons: tuple[str, ...]


def _clamp01(value: float) -> float:
    # NaN fails both comparisons and becomes 0: a broken input never raises attention.
    if value > 0.0:
        return value if value < 1.0 else 1.0
    return 0.0


class _Unwritten(tuple):  # type: ignore[type-arg]
    """The reasons of an :class:`Attention` not yet written out: what scoring found, kept until asked.

    Most messages are scored LOW and their reasons are never read (only ``/why``, the console and
    the replay read them), while writing them costs more than the score itself (a formatted float
    each). Scoring keeps the shares it added, so the reasons written later are the ones it would
    have written; a message scored above LOW has its reasons written at once (its event carries
    them). A tuple ``(inp, weights, score, decision, keyword, thread, silence)``, made with
    ``tuple.__new__``: a class with an ``__init__`` cost more to make than the score itself.
    """

    __slots__ = ()


class _Reasons:
    """``Attention.reasons``: the slot itself, written out on the first read when it holds an
    :class:`_Unwritten` (the same tuple from then on, for equality, hashing, repr and fields alike)."""

    __slots__ = ("_slot",)

    def __init__(self, slot: Any) -> None:
        self._slot = slot  # the slot's member descriptor

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _Reasons: ...
    @overload
    def __get__(self, obj: Attention, owner: type | None = None) -> tuple[str, ...]: ...
    def __get__(self, obj: Attention | None, owner: type | None = None) -> tuple[str, ...] | _Reasons:
        if obj is None:
            return self
        value = self._slot.__get__(obj, owner)
        if value.__class__ is _Unwritten:
            value = _write_reasons(*value)
            self._slot.__set__(obj, value)
        return value  # type: ignore[no-any-return]

    def __set__(self, obj: Attention, value: object) -> None:
        self._slot.__set__(obj, value)

    def __delete__(self, obj: Attention) -> None:
        self._slot.__delete__(obj)


setattr(Attention, "reasons", _Reasons(Attention.__dict__["reasons"]))  # noqa: B010  (after the class is made)

_attention = builder(Attention)  # positional, through the slots: made for every message
# Members bound once: an Enum class attribute lookup costs ~10x a global, and this runs per message.
_FORCED, _HIGH, _MEDIUM, _LOW = Decision.FORCED, Decision.HIGH, Decision.MEDIUM, Decision.LOW
_new_tuple = tuple.__new__


def score_attention(inp: AttentionInput, weights: AttentionWeights) -> Attention:
    """Score a message's inputs; see the module docstring for what each input means.

    A LOW attention writes its reasons when they are first read (:class:`_Unwritten`): the same
    words either way.
    """
    score = 0.0
    if inp.direct and weights.direct:
        score += weights.direct
    keyword = _clamp01(inp.keyword_score) * weights.keyword
    if keyword > 0.0:
        score += keyword
    thread = _clamp01(inp.thread_continuity) * weights.thread
    if thread > 0.0:
        score += thread
    if inp.question and weights.question:
        score += weights.question
    silence = _clamp01(inp.silence_seconds / weights.silence_full) * weights.silence
    if silence >= 0.005:  # smaller shares would read "+0.00"; they are left out of score and reasons
        score += silence
    if inp.recently_replied and weights.recently_replied:
        score -= weights.recently_replied
    if inp.budget_exhausted and weights.budget_exhausted:
        score -= weights.budget_exhausted
    score = _clamp01(score)
    if inp.forced:
        decision = _FORCED
    elif score >= weights.high:
        decision = _HIGH
    elif score >= weights.medium:
        decision = _MEDIUM
    else:
        unwritten = _new_tuple(_Unwritten, (inp, weights, score, _LOW, keyword, thread, silence))
        return _attention(score, _LOW, unwritten)
    return _attention(
        score, decision, _write_reasons(inp, weights, score, decision, keyword, thread, silence)
    )


def _write_reasons(
    inp: AttentionInput,
    weights: AttentionWeights,
    score: float,
    decision: Decision,
    keyword: float,
    thread: float,
    silence: float,
) -> tuple[str, ...]:
    """The reasons for ``score`` and ``decision``, with the keyword, thread and silence shares
    :func:`score_attention` added (each reason says what its term added)."""
    reasons: list[str] = []
    if inp.forced:
        reasons.append("forced (addressed to the bot)")
    if inp.direct and weights.direct:
        reasons.append(f"direct +{weights.direct:.2f}")
    if keyword > 0.0:
        named = ",".join(inp.keywords[:3]) + ("…" if len(inp.keywords) > 3 else "")
        reasons.append(f"keyword {named} +{keyword:.2f}" if named else f"keyword +{keyword:.2f}")
    if thread > 0.0:
        reasons.append(f"thread +{thread:.2f}")
    if inp.question and weights.question:
        reasons.append(f"question +{weights.question:.2f}")
    if silence >= 0.005:
        reasons.append(f"silence +{silence:.2f}")
    if inp.recently_replied and weights.recently_replied:
        reasons.append(f"recently replied -{weights.recently_replied:.2f}")
    if inp.budget_exhausted and weights.budget_exhausted:
        reasons.append(f"budget exhausted -{weights.budget_exhausted:.2f}")
    if decision is _HIGH:
        reasons.append(f"score {score:.2f} >= high {weights.high:.2f}")
    elif decision is _MEDIUM:
        reasons.append(f"score {score:.2f} >= medium {weights.medium:.2f}")
    elif decision is _LOW:
        reasons.append(f"score {score:.2f} < medium {weights.medium:.2f}")
    return tuple(reasons)
