"""The Reasoner: whatever decides an episode's next action (a model, a script, a rule).

The model-backed reasoner lives with the bot; :class:`ScriptedReasoner` plays a fixed list of
answers (tests, replays, demos) and can compute an answer from the episode so far.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from runtime.episodes.episode import Episode
from runtime.tools.spec import ToolSpec


class Reasoner(Protocol):
    """Decides one step. May return an action value or a raw dict (see ``parse_action``)."""

    async def next(self, episode: Episode, tools: Sequence[ToolSpec]) -> object: ...


Script = object | Callable[[Episode, Sequence[ToolSpec]], object]


class ScriptedReasoner:
    """Answers from a script, one entry per call; an entry may be a callable of (episode, tools).

    Running out of script raises ``LookupError`` — which the loop treats like any reasoner fault.
    """

    def __init__(self, script: Iterable[Script]) -> None:
        self._script = list(script)
        self._position = 0
        self.seen: list[Episode] = []

    @property
    def remaining(self) -> int:
        return len(self._script) - self._position

    async def next(self, episode: Episode, tools: Sequence[ToolSpec]) -> object:
        self.seen.append(episode)
        if self._position >= len(self._script):
            raise LookupError("the script has no more answers")
        entry = self._script[self._position]
        self._position += 1
        if callable(entry):
            return entry(episode, tools)
        return entry
