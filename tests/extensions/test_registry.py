"""Registering games, activities and life sources (design/0002 §11, §13 extensions row): register,
unregister, cleanup on plugin unload — nothing a scope registered survives it."""

from __future__ import annotations

from dataclasses import fields

import pytest
from pydantic import BaseModel

from runtime.extensions import (
    ActivitySpec,
    ChatActivityLog,
    DuplicateExtensionError,
    ExtensionRegistry,
    GameContext,
    GameSpec,
    GameTool,
    InvalidExtensionError,
    LifeContext,
    LifeDirector,
    LifeSourceSpec,
    Proposal,
    Scope,
)
from runtime.kernel.clock import ManualClock
from runtime.kernel.events import EventState
from runtime.kernel.kernel import Kernel
from runtime.kernel.lexicon import DynamicLexicon, LexiconKey, LexiconScope
from runtime.tools import DuplicateToolError, ToolContext, ToolRegistry, ToolSpec
from tests.extensions.conftest import said

GAME_KEY = LexiconKey(LexiconScope.GAME, "dice")
ACTIVITY_KEY = LexiconKey(LexiconScope.ACTIVITY, "reading")


class RollArgs(BaseModel):
    sides: int = 6


def dice(seen: list[object] | None = None) -> GameSpec:
    def roll(ctx: GameContext) -> int:
        if seen is not None:
            seen.append(ctx)
        return min(ctx.args.sides, 4)

    return GameSpec(
        name="dice",
        description="Dice",
        terms=("掷骰子",),
        tools=(GameTool("roll", "Roll a die.", roll, args_model=RollArgs),),
    )


def reading(ticks: list[float]) -> ActivitySpec:
    def advance(ctx: LifeContext) -> list[Proposal]:
        ticks.append(ctx.now)
        return [Proposal(chat_id=c, reason="finished a chapter") for c in ctx.active_chats]

    return ActivitySpec(
        name="reading",
        advance=advance,
        interval=60.0,
        terms=("三体",),
        describe=lambda: "reading 三体, chapter 3",
    )


@pytest.mark.asyncio
async def test_game_moves_become_tools_that_see_only_a_game_context(
    registry: ExtensionRegistry, tools: ToolRegistry, plugin: Scope
) -> None:
    seen: list[object] = []
    registry.register_game(plugin, dice(seen))
    assert registry.game_tools("dice") == ("dice_roll",)
    spec = tools.get("dice_roll")
    assert spec is not None
    assert spec.side_effect
    context = ToolContext(
        chat_id="group:1",
        user_id="42",
        thread_id="th-9",
        episode_id="ep-3",
        permissions=frozenset({"admin"}),
        now=123.0,
    )
    result = await tools.invoke("dice_roll", {"sides": 20}, context)
    assert result.content == "4"
    (ctx,) = seen
    assert isinstance(ctx, GameContext)
    assert [f.name for f in fields(ctx)] == ["chat_id", "user_id", "args"]
    assert (ctx.chat_id, ctx.user_id, ctx.args) == ("group:1", "42", RollArgs(sides=20))


def test_game_terms_are_in_the_lexicon_while_registered(
    registry: ExtensionRegistry, lexicon: DynamicLexicon, plugin: Scope
) -> None:
    dispose = registry.register_game(plugin, dice())
    assert [h.term for h in lexicon.match("来掷骰子吧", [GAME_KEY])] == ["掷骰子"]
    dispose()
    assert lexicon.match("来掷骰子吧", [GAME_KEY]) == []
    assert registry.statistics().games == 0


def test_duplicate_names_are_refused(registry: ExtensionRegistry, plugin: Scope) -> None:
    registry.register_game(plugin, dice())
    with pytest.raises(DuplicateExtensionError):
        registry.register_game(Scope("other"), dice())
    registry.register_life_source(plugin, LifeSourceSpec("weather", lambda ctx: None, 60))
    with pytest.raises(DuplicateExtensionError):
        registry.register_life_source(plugin, LifeSourceSpec("weather", lambda ctx: None, 60))


def test_bad_specs_are_refused() -> None:
    with pytest.raises(InvalidExtensionError):
        GameSpec(name="Dice!", description="x", tools=(GameTool("a", "b", lambda c: 1),))
    with pytest.raises(InvalidExtensionError):
        GameSpec(name="dice", description="x", tools=())
    with pytest.raises(InvalidExtensionError):
        ActivitySpec(name="nap", advance=lambda c: None, interval=0)


def test_a_half_failed_registration_leaves_nothing_behind(
    registry: ExtensionRegistry, tools: ToolRegistry, lexicon: DynamicLexicon, plugin: Scope
) -> None:
    tools.register(ToolSpec(name="dice_peek", description="Taken already.", execute=lambda a, c: None))
    game = GameSpec(
        name="dice",
        description="Dice",
        terms=("掷骰子",),
        tools=(GameTool("roll", "Roll.", lambda c: 1), GameTool("peek", "Peek.", lambda c: 2)),
    )
    with pytest.raises(DuplicateToolError):
        registry.register_game(plugin, game)
    assert "dice_roll" not in tools
    assert "dice_peek" in tools
    assert lexicon.match("掷骰子", [GAME_KEY]) == []
    assert registry.entries() == []
    assert plugin.statistics().live == 0


def test_activity_descriptions_are_readable(registry: ExtensionRegistry, plugin: Scope) -> None:
    registry.register_activity(plugin, reading([]))
    assert registry.activity_descriptions() == [("reading", "reading 三体, chapter 3")]


def test_lexicon_keys_follow_registrations(registry: ExtensionRegistry, plugin: Scope) -> None:
    dispose_game = registry.register_game(plugin, dice())
    registry.register_activity(plugin, reading([]))
    registry.register_life_source(plugin, LifeSourceSpec("weather", lambda ctx: None, 60))
    assert registry.lexicon_keys() == (GAME_KEY, ACTIVITY_KEY)
    dispose_game()
    assert registry.lexicon_keys() == (ACTIVITY_KEY,)


@pytest.mark.asyncio
async def test_plugin_unload_leaves_nothing_behind(
    registry: ExtensionRegistry,
    tools: ToolRegistry,
    lexicon: DynamicLexicon,
    sink: Kernel,
    director: LifeDirector,
    chats: ChatActivityLog,
    clock: ManualClock,
) -> None:
    """Tools, lexicon terms, scheduled activations and timers registered by a plugin all go with it;
    another plugin's registrations stay."""
    other = Scope("other-plugin")
    registry.register_life_source(other, LifeSourceSpec("festival", lambda ctx: None, 3_600))
    tools.register(ToolSpec(name="keep_me", description="Not the plugin's.", execute=lambda a, c: "ok"))

    plugin = Scope("plugin")
    ticks: list[float] = []
    registry.register_game(plugin, dice())
    registry.register_activity(plugin, reading(ticks))
    game_scope = plugin.child("extra")
    registry.register_life_source(
        game_scope,
        LifeSourceSpec("nudge", lambda ctx: [Proposal("group:1", "nudge", not_before=ctx.now + 300)], 60),
    )

    chats.note(said(clock, "1"))
    report = await director.tick()
    assert len(report.emitted) == 2
    pending = list(report.emitted)
    assert all(sink.events.require(e).state is EventState.SCHEDULED for e in pending)
    assert director.statistics().timers == 3
    assert lexicon.match("读三体还是掷骰子", [GAME_KEY, ACTIVITY_KEY]) != []

    assert plugin.dispose() == 0

    assert "dice_roll" not in tools
    assert [s.name for s in tools.list()] == ["keep_me"]
    assert lexicon.match("读三体还是掷骰子", [GAME_KEY, ACTIVITY_KEY]) == []
    assert all(sink.events.require(e).state is EventState.SKIPPED for e in pending)
    assert len(sink.scheduler) == 0
    assert [e.key for e in registry.entries()] == ["life_source:festival"]
    stats = director.statistics()
    assert (stats.timers, stats.tracked_activations) == (1, 0)
    assert registry.statistics().terms == 0
    assert plugin.statistics().live == 0
    clock.advance(3_600)
    await director.tick()
    assert len(ticks) == 1  # the activity is never advanced again
