"""Quiet periods: a chat where the bot says nothing until a time, or until lifted.

Two kinds, because who asked decides who may lift it: a member's mute word opens an ``asked`` period
that any member's unmute phrase lifts; a superuser's ``/mute`` opens an ``imposed`` one that only
``/unmute`` lifts. The edge's send gates and the runtime's saved state both speak of these values;
:class:`QuietBook` holds the open periods with that rule, for every edge's gates alike.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "QUIET_ASKED",
    "QUIET_FILE",
    "QUIET_IMPOSED",
    "QUIET_KINDS",
    "QUIET_LABELS",
    "QuietBook",
    "QuietPeriod",
]

#: The saved quiet periods in the data directory: a JSON object, chat id -> until and kind.
QUIET_FILE = "quiet.json"

QUIET_ASKED = "asked"  # a member said a mute word: the unmute phrase lifts it
QUIET_IMPOSED = "imposed"  # a superuser's /mute: only /unmute lifts it
QUIET_KINDS = (QUIET_ASKED, QUIET_IMPOSED)
QUIET_LABELS = {QUIET_ASKED: "成员要求", QUIET_IMPOSED: "管理员"}  # as /status names them


class QuietPeriod(NamedTuple):
    until: float | None  # None: until lifted
    kind: str  # QUIET_ASKED | QUIET_IMPOSED


class QuietBook:
    """The quiet periods of each chat. An asked period never replaces a live imposed one; lifting can be
    limited to one kind (the unmute phrase lifts only an asked one)."""

    __slots__ = ("_periods",)

    def __init__(self) -> None:
        self._periods: dict[str, QuietPeriod] = {}

    def open(self, chat_id: str, until: float | None, kind: str, *, now: float | None = None) -> bool:
        """Open a quiet period; False (nothing changed) when an asked one would replace a live imposed
        one (``now`` None: any imposed one counts as live)."""
        if kind not in QUIET_KINDS:
            raise ValueError(f"unknown quiet kind {kind!r}")
        current = self._periods.get(chat_id)
        if (
            kind == QUIET_ASKED
            and current is not None
            and current.kind == QUIET_IMPOSED
            and (current.until is None or now is None or current.until > now)
        ):
            return False
        self._periods[chat_id] = QuietPeriod(until, kind)
        return True

    def lift(self, chat_id: str, *, only: str | None = None) -> bool:
        """End a quiet period (``only``: if it is of that kind); False when none was ended."""
        current = self._periods.get(chat_id)
        if current is None or (only is not None and current.kind != only):
            return False
        del self._periods[chat_id]
        return True

    def current(self, chat_id: str, now: float) -> QuietPeriod | None:
        """The chat's live period; one that has run out is forgotten."""
        period = self._periods.get(chat_id)
        if period is not None and period.until is not None and period.until <= now:
            del self._periods[chat_id]
            return None
        return period

    def chats(self) -> set[str]:
        return set(self._periods)
