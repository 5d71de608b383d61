"""What plugins register: games, activities and life sources (design/0002 §11).

The hard constraints hold by construction:

- a game's handlers receive a :class:`GameContext` — chat id, user id, validated arguments — and
  nothing else: no persona, no policy, no episode, no bot;
- a game is only reachable as tools; whether to call them is the persona's ReAct decision;
- activities and life sources are advanced only by the LifeDirector's tick: nothing else calls
  ``advance`` / ``poll``, and the model can read an activity's ``describe()`` but never change it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel

from runtime.extensions.errors import InvalidExtensionError

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def check_name(kind: str, name: str) -> None:
    if not _NAME.match(name):
        raise InvalidExtensionError(f"{kind} name {name!r} must match [a-z][a-z0-9_]{{0,31}}")


@dataclass(frozen=True, slots=True)
class GameContext:
    """All a game ever learns about a call: where, who, and the validated arguments."""

    chat_id: str
    user_id: str | None
    args: Any


GameHandler = Callable[[GameContext], "object | Awaitable[object]"]


@dataclass(frozen=True, slots=True)
class GameTool:
    """One move of a game, exposed as the tool ``<game>_<name>``."""

    name: str
    description: str
    handler: GameHandler
    args_model: type[BaseModel] | None = None
    side_effect: bool = True
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class GameSpec:
    """A game: its tools, the words that should catch the persona's ear, and who may play."""

    name: str
    description: str
    tools: tuple[GameTool, ...]
    terms: tuple[str, ...] = ()
    permissions: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        check_name("game", self.name)
        if not self.tools:
            raise InvalidExtensionError(f"game {self.name!r} exposes no tools")


class Grounds(StrEnum):
    """What the bot has to say in a chat that went silent: the only reasons it speaks into one."""

    OPEN_QUESTION = "open_question"  # someone asked the bot something it never answered
    FOLLOW_UP = "follow_up"  # something it was to come back to is due
    MEMORY_HOOK = "memory_hook"  # a memory ties to now (a date, a promise)


@dataclass(frozen=True, slots=True)
class Proposal:
    """A life source's wish to speak in a chat later; the director decides if it may.

    ``reason`` says what the bot would speak about (a proposal without one is never emitted);
    ``grounds`` which of the :class:`Grounds` it is, if any: only a proposal with grounds may speak
    into a chat that went silent. Times are clock seconds; ``not_before`` defaults to the tick's time
    and ``deadline`` to ``[life] default_deadline_ms`` after it.
    """

    chat_id: str
    reason: str
    not_before: float | None = None
    deadline: float | None = None
    priority: float = 0.3
    thread_id: str | None = None
    kind: str = "proactive"
    payload: Mapping[str, object] = field(default_factory=dict)
    grounds: Grounds | None = None

    def __post_init__(self) -> None:
        if self.grounds is not None and self.grounds.__class__ is not Grounds:
            object.__setattr__(self, "grounds", Grounds(self.grounds))  # ValueError for an unknown one


@dataclass(frozen=True, slots=True)
class LifeContext:
    """What a tick tells activities and life sources: the time, the live chats, quiet hours, and the
    chats someone spoke in within the longest grounds window (``known_chats``, most recent first:
    where a silent chat's follow-up or memory hook may still be heard)."""

    now: float
    active_chats: tuple[str, ...]
    quiet: bool
    known_chats: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ActivitySpec:
    """Something the persona is doing over time (reading, watching, a season's event).

    ``advance`` is called by the director every ``interval`` seconds and may return proposals;
    ``describe`` (optional) says what the persona is up to, for its context.
    """

    name: str
    advance: Callable[[LifeContext], Any]
    interval: float
    terms: tuple[str, ...] = ()
    describe: Callable[[], str] | None = None

    def __post_init__(self) -> None:
        check_name("activity", self.name)
        if not self.interval > 0:
            raise InvalidExtensionError(f"activity {self.name!r}: interval must be positive")


@dataclass(frozen=True, slots=True)
class LifeSourceSpec:
    """Something outside the chats worth mentioning (a festival, the weather, a reminder).

    ``poll`` is called by the director every ``interval`` seconds and returns proposals.
    """

    name: str
    poll: Callable[[LifeContext], Any]
    interval: float

    def __post_init__(self) -> None:
        check_name("life source", self.name)
        if not self.interval > 0:
            raise InvalidExtensionError(f"life source {self.name!r}: interval must be positive")


def as_proposals(result: object) -> list[Proposal]:
    """Proposals out of what ``advance``/``poll`` returned; anything else is a fault of the source."""
    if result is None:
        return []
    if isinstance(result, Proposal):
        return [result]
    if not isinstance(result, Iterable) or isinstance(result, str | bytes | Mapping):
        raise TypeError(f"expected Proposal values, got {type(result).__name__}")
    items = list(result)
    for item in items:
        if not isinstance(item, Proposal):
            raise TypeError(f"expected Proposal values, got {type(item).__name__}")
    return items
