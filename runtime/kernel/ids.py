"""Ids the kernel makes for its own objects (events ``ev-…``, threads ``th-…``).

An :data:`IdFactory` is any ``Callable[[str], str]`` that takes a prefix and returns a fresh id. The
kernel's default, :class:`CounterIds`, counts per prefix (``ev-1``, ``ev-2``, ``th-1``...), so a replay
of the same log yields the same ids. The bot injects :class:`UniqueIds`, whose ids stay unique across
restarts because they start with the time and end with a random suffix; it takes the clock and the
source of randomness as arguments so the kernel itself still never reads the wall clock.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from runtime.kernel.clock import Clock

__all__ = ["CounterIds", "IdFactory", "UniqueIds", "counter_ids"]

IdFactory = Callable[[str], str]

_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(value: int) -> str:
    if value <= 0:
        return "0"
    out: list[str] = []
    while value:
        value, rem = divmod(value, 36)
        out.append(_DIGITS[rem])
    return "".join(reversed(out))


class CounterIds:
    """Deterministic ids: ``<prefix>-<n>`` with one counter per prefix, starting at 1."""

    __slots__ = ("_counters",)

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}

    def __call__(self, prefix: str) -> str:
        n = self._counters.get(prefix, 0) + 1
        self._counters[prefix] = n
        return f"{prefix}-{n}"

    def issued(self, prefix: str) -> int:
        """How many ids this factory has made for ``prefix``."""
        return self._counters.get(prefix, 0)


def counter_ids() -> IdFactory:
    """A fresh deterministic factory (the kernel's default)."""
    return CounterIds()


class UniqueIds:
    """Ids unique across restarts: ``<prefix>-<ms since epoch, 9 base-36 digits><seq>-<random hex>``.

    The millisecond stamp keeps ids roughly sortable by creation time; the per-process sequence keeps
    ids made in the same millisecond apart; the random suffix separates two processes started in the
    same millisecond (or a clock that was set back).
    """

    __slots__ = ("_clock", "_entropy", "_last_ms", "_seq")

    def __init__(self, clock: Clock, entropy: Callable[[int], str] = secrets.token_hex) -> None:
        self._clock = clock
        self._entropy = entropy
        self._last_ms = -1
        self._seq = 0

    def __call__(self, prefix: str) -> str:
        ms = int(self._clock.now() * 1000)
        if ms == self._last_ms:
            self._seq += 1
        else:
            self._last_ms = ms
            self._seq = 0
        return f"{prefix}-{_base36(ms).zfill(9)}{_base36(self._seq)}-{self._entropy(3)}"
