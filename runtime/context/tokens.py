"""Token counting as the Context Runtime needs it: a protocol, and a rough counter to fall back on.

The runtime's real estimator lives with the model client (``runtime.llm``); anything with
``count(text) -> int`` fits. :class:`RoughTokenCounter` is the offline fallback used when no counter is
injected: it errs high on Chinese (one Han character can be more than one token in common
vocabularies), because a prompt that overruns the window fails while one that underuses it does not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

__all__ = [
    "MESSAGE_OVERHEAD",
    "REPLY_PRIMING",
    "RoughTokenCounter",
    "TokenCounter",
    "as_counter",
    "count_messages",
]

#: Tokens a chat message costs beyond its content (role and separators), and the reply's priming.
MESSAGE_OVERHEAD = 4
REPLY_PRIMING = 3


class TokenCounter(Protocol):
    def count(self, text: str) -> int: ...


# CJK radicals, kana and unified ideographs; hangul; compatibility ideographs; full-width forms and
# punctuation; the supplementary ideographs; emoji (several byte-level tokens each).
_WIDE = re.compile(
    "[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f\U0001f000-\U0010ffff]"
)


class RoughTokenCounter:
    """``1.2`` tokens per wide character, one per three other characters, rounded up."""

    __slots__ = ()

    def count(self, text: str) -> int:
        if not text:
            return 0
        if text.isascii():
            return math.ceil(len(text) / 3)
        wide = len(_WIDE.findall(text))
        return math.ceil(wide * 1.2 + (len(text) - wide) / 3)


class _TextCounter:
    """Adapts an estimator whose method is ``count_text`` (``runtime.llm.tokens.TokenEstimator``)."""

    __slots__ = ("_count_text",)

    def __init__(self, count_text: Callable[[str], int]) -> None:
        self._count_text = count_text

    def count(self, text: str) -> int:
        return self._count_text(text)


def as_counter(estimator: object | None, *, model: str | None = None) -> TokenCounter:
    """Anything with ``count(text)``, or ``runtime.llm.tokens.TokenEstimator`` (its ``estimate_text``
    calibrated for ``model`` when one is named, else its raw ``count_text``), as a :class:`TokenCounter`;
    ``None`` gives the rough fallback."""
    if estimator is None:
        return RoughTokenCounter()
    estimate_text = getattr(estimator, "estimate_text", None)
    if model is not None and callable(estimate_text):
        return _TextCounter(lambda text: int(estimate_text(text, model=model)))
    count = getattr(estimator, "count", None)
    if callable(count):
        return estimator  # type: ignore[return-value]
    count_text = getattr(estimator, "count_text", None)
    if callable(count_text):
        return _TextCounter(count_text)
    raise TypeError(f"{type(estimator).__name__} has neither count(text) nor count_text(text)")


def count_messages(messages: Iterable[Mapping[str, str]], counter: TokenCounter) -> int:
    """What a chat ``messages`` list costs as a prompt, overheads included."""
    total = REPLY_PRIMING
    for message in messages:
        total += MESSAGE_OVERHEAD + counter.count(message.get("content") or "")
    return total
