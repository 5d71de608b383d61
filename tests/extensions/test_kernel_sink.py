"""Extensions on the real Kernel: terms in its lexicon, proactive activations in its scheduler,
both gone when the plugin goes."""

from __future__ import annotations

import pytest

from runtime.extensions import (
    ChatActivityLog,
    ExtensionRegistry,
    LifeContext,
    LifeDirector,
    LifeSettings,
    LifeSourceSpec,
    Proposal,
    Scope,
)
from runtime.extensions.games.guess_number import GuessNumberGame
from runtime.kernel.clock import ManualClock
from runtime.kernel.events import EventState
from runtime.kernel.kernel import ActivationOutcome, Kernel
from runtime.kernel.lexicon import LexiconKey, LexiconScope
from runtime.tools import ToolRegistry
from tests.extensions.conftest import NOON, said


@pytest.mark.asyncio
async def test_plugin_on_the_real_kernel(clock: ManualClock) -> None:
    kernel = Kernel(now=NOON)
    tools = ToolRegistry()
    registry = ExtensionRegistry(tools, clock=clock, lexicon=kernel.lexicon)
    chats = ChatActivityLog()
    director = LifeDirector(registry, kernel, chats, clock=clock, settings=LifeSettings())
    plugin = Scope("plugin")
    registry.register_game(plugin, GuessNumberGame().spec())

    def teaser(ctx: LifeContext) -> list[Proposal]:
        return [Proposal(c, "invite to a game", not_before=ctx.now + 60) for c in ctx.active_chats]

    registry.register_life_source(plugin, LifeSourceSpec("teaser", teaser, 3_600))
    game_key = LexiconKey(LexiconScope.GAME, "guess_number")

    message = said(clock, "1", "有人玩猜数字吗")
    chats.note(message)
    kernel.ingest(message)
    assert kernel.lexicon.match(message.text, [game_key]) != []
    (event_id,) = (await director.tick()).emitted
    clock.advance(60)
    (activation,) = kernel.due(clock.now())
    assert (activation.event.id, activation.outcome) == (event_id, ActivationOutcome.READY)

    # A second proposal is pending when the plugin unloads: it must not fire afterwards.
    clock.advance(3_600)
    chats.note(said(clock, "1", "还在吗"))
    (pending,) = (await director.tick()).emitted
    plugin.dispose()
    assert kernel.events.require(pending).state is EventState.SKIPPED
    assert kernel.due(clock.now() + 120) == []
    assert kernel.lexicon.match(message.text, [game_key]) == []
    assert len(tools) == 0
