"""Ids for the running bot: unique across restarts, and able to give a restored thread its old id.

On start the conversation threads are rebuilt by replaying the last hour's stored messages through the
kernel's ThreadTracker. :meth:`RestoringIds.reuse` primes the next ``th`` id with the id the message was
stored under, so a thread keeps its id across the restart: the stored messages, waiting episodes and
topic links that name it still find it.
"""

from __future__ import annotations

from runtime.kernel.clock import Clock
from runtime.kernel.ids import UniqueIds

__all__ = ["RestoringIds"]


class RestoringIds:
    """A :class:`UniqueIds` whose next id of one prefix can be primed once."""

    __slots__ = ("_primed", "_unique")

    def __init__(self, clock: Clock) -> None:
        self._unique = UniqueIds(clock)
        self._primed: dict[str, str] = {}

    def reuse(self, prefix: str, ident: str | None) -> None:
        """The next id asked for with ``prefix`` is ``ident`` (once); ``None`` clears the priming."""
        if ident is None:
            self._primed.pop(prefix, None)
        else:
            self._primed[prefix] = ident

    def __call__(self, prefix: str) -> str:
        # One-shot: a caller that rejects the id (already taken) asks again and gets a fresh one.
        primed = self._primed.pop(prefix, None)
        return primed if primed is not None else self._unique(prefix)
