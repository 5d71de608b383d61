"""The ExtensionRegistry: games, activities and life sources, each owned by a scope.

``register_game`` turns a game's moves into tools (``<game>_<move>``) in the ToolRegistry, with
handlers that are handed a :class:`GameContext` only, and adds the game's terms to the lexicon under
``game:<name>``; ``register_activity`` adds an activity (and its terms under ``activity:<name>``);
``register_life_source`` adds a source. Every piece goes into a child of the caller's scope, so the
returned disposer — or disposing the plugin's scope — removes all of it, newest first. A registration
that fails half-way is undone before the error is raised.

Removal listeners (the LifeDirector) hear when an activity or life source goes, so they can drop
its timer and cancel the activations it had scheduled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from runtime.extensions.errors import DuplicateExtensionError
from runtime.extensions.scope import Disposer, Scope
from runtime.extensions.spec import ActivitySpec, GameContext, GameSpec, GameTool, LifeSourceSpec
from runtime.kernel.clock import Clock
from runtime.kernel.lexicon.terms import LexiconKey, LexiconScope, TermStatus
from runtime.tools.registry import ToolRegistry
from runtime.tools.spec import ToolContext, ToolSpec

Kind = Literal["game", "activity", "life_source"]


class TermRegistry(Protocol):
    """What registrations need of the DynamicLexicon."""

    def add(self, key: LexiconKey, text: str, *, now: float, source: str, status: TermStatus) -> object: ...

    def remove(self, key: LexiconKey, text: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class Registration:
    kind: Kind
    name: str
    spec: Any
    scope: Scope

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True, slots=True)
class ExtensionStatistics:
    games: int
    activities: int
    life_sources: int
    game_tools: int
    terms: int


class ExtensionRegistry:
    """Games, activities and life sources; see the module docstring."""

    def __init__(self, tools: ToolRegistry, *, clock: Clock, lexicon: TermRegistry | None = None) -> None:
        self.tools = tools
        self._clock = clock
        self._lexicon = lexicon
        self._entries: dict[str, Registration] = {}
        self._game_tools: dict[str, tuple[str, ...]] = {}
        self._terms = 0
        self._listeners: dict[int, Callable[[Registration], None]] = {}
        self._next_listener = 0

    # -- registration -----------------------------------------------------------------------

    def register_game(self, scope: Scope, spec: GameSpec) -> Disposer:
        """Expose ``spec``'s moves as tools and its terms in the lexicon, owned by ``scope``."""

        def build(owned: Scope) -> None:
            names = []
            for move in spec.tools:
                tool = _game_tool(spec, move)
                owned.add(self.tools.register(tool))
                names.append(tool.name)
            self._game_tools[spec.name] = tuple(names)
            owned.add(lambda: self._game_tools.pop(spec.name, None))
            self.add_terms(owned, LexiconKey(LexiconScope.GAME, spec.name), spec.terms, f"game:{spec.name}")

        return self._register("game", spec.name, spec, scope, build)

    def register_activity(self, scope: Scope, spec: ActivitySpec) -> Disposer:
        """Add an activity the LifeDirector will advance, owned by ``scope``."""

        def build(owned: Scope) -> None:
            self.add_terms(
                owned, LexiconKey(LexiconScope.ACTIVITY, spec.name), spec.terms, f"activity:{spec.name}"
            )

        return self._register("activity", spec.name, spec, scope, build)

    def register_life_source(self, scope: Scope, spec: LifeSourceSpec) -> Disposer:
        """Add a life source the LifeDirector will poll, owned by ``scope``."""
        return self._register("life_source", spec.name, spec, scope, lambda owned: None)

    def _register(
        self, kind: Kind, name: str, spec: object, scope: Scope, build: Callable[[Scope], None]
    ) -> Disposer:
        key = f"{kind}:{name}"
        if key in self._entries:
            raise DuplicateExtensionError(f"a {kind.replace('_', ' ')} named {name!r} is already registered")
        owned = scope.child(key)
        entry = Registration(kind, name, spec, owned)
        try:
            build(owned)
        except BaseException:
            owned.dispose()
            raise
        self._entries[key] = entry
        # Added last, so it runs first on disposal: listeners still see the other pieces in place.
        owned.add(lambda: self._remove(entry))
        return owned.dispose

    def _remove(self, entry: Registration) -> None:
        if self._entries.get(entry.key) is not entry:
            return
        del self._entries[entry.key]
        for listener in list(self._listeners.values()):
            listener(entry)

    def add_terms(self, owned: Scope, key: LexiconKey, terms: Iterable[str], source: str) -> None:
        """Pin ``terms`` under ``key``, each removal owned by ``owned`` (counted in the statistics)."""
        lexicon = self._lexicon
        if lexicon is None:
            return
        for text in terms:
            lexicon.add(key, text, now=self._clock.now(), source=source, status=TermStatus.PINNED)
            self._terms += 1

            def remove(text: str = text) -> None:
                self._terms -= 1
                lexicon.remove(key, text)

            owned.add(remove)

    # -- reading ----------------------------------------------------------------------------

    def on_removed(self, listener: Callable[[Registration], None]) -> Disposer:
        """Call ``listener`` whenever a registration goes; returns the disposer of the subscription."""
        key = self._next_listener
        self._next_listener += 1
        self._listeners[key] = listener
        return lambda: self._listeners.pop(key, None)

    def entries(self, kind: Kind | None = None) -> list[Registration]:
        return [e for e in self._entries.values() if kind is None or e.kind == kind]

    def lexicon_keys(self) -> tuple[LexiconKey, ...]:
        """The lexicon keys of registered games and activities, for matching incoming messages."""
        keys = []
        for entry in self._entries.values():
            if entry.kind == "game":
                keys.append(LexiconKey(LexiconScope.GAME, entry.name))
            elif entry.kind == "activity":
                keys.append(LexiconKey(LexiconScope.ACTIVITY, entry.name))
        return tuple(keys)

    def game_tools(self, game: str) -> tuple[str, ...]:
        """The tool names a game is exposed as (empty when it is not registered)."""
        return self._game_tools.get(game, ())

    def activity_descriptions(self) -> list[tuple[str, str]]:
        """What the persona is up to, per activity, for its context (read-only)."""
        out = []
        for entry in self.entries("activity"):
            describe = entry.spec.describe
            if describe is not None:
                out.append((entry.name, str(describe())))
        return out

    def statistics(self) -> ExtensionStatistics:
        kinds = [e.kind for e in self._entries.values()]
        return ExtensionStatistics(
            games=kinds.count("game"),
            activities=kinds.count("activity"),
            life_sources=kinds.count("life_source"),
            game_tools=sum(len(t) for t in self._game_tools.values()),
            terms=self._terms,
        )


def _game_tool(game: GameSpec, move: GameTool) -> ToolSpec:
    handler = move.handler

    def execute(args: object, context: ToolContext) -> object:
        # The whole of what a game learns about the call; see runtime.extensions.spec.
        # An async handler's coroutine is awaited (and timed) by the ToolRegistry.
        return handler(GameContext(chat_id=context.chat_id, user_id=context.user_id, args=args))

    return ToolSpec(
        name=f"{game.name}_{move.name}",
        description=f"{game.description} — {move.description}",
        execute=execute,
        args_model=move.args_model,
        permissions=game.permissions,
        timeout=move.timeout,
        side_effect=move.side_effect,
        tags=("game", game.name),
    )
