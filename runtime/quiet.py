"""Quiet periods: a chat where the bot says nothing until a time, or until lifted.

Two kinds, because who asked decides who may lift it: a member's mute word opens an ``asked`` period
that any member's unmute phrase lifts; a superuser's ``/mute`` opens an ``imposed`` one that only
``/unmute`` lifts. The edge's send gates and the runtime's saved state both speak of these values.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["QUIET_ASKED", "QUIET_FILE", "QUIET_IMPOSED", "QUIET_KINDS", "QUIET_LABELS", "QuietPeriod"]

#: The saved quiet periods in the data directory: a JSON object, chat id -> until and kind.
QUIET_FILE = "quiet.json"

QUIET_ASKED = "asked"  # a member said a mute word: the unmute phrase lifts it
QUIET_IMPOSED = "imposed"  # a superuser's /mute: only /unmute lifts it
QUIET_KINDS = (QUIET_ASKED, QUIET_IMPOSED)
QUIET_LABELS = {QUIET_ASKED: "成员要求", QUIET_IMPOSED: "管理员"}  # as /status names them


class QuietPeriod(NamedTuple):
    until: float | None  # None: until lifted
    kind: str  # QUIET_ASKED | QUIET_IMPOSED
