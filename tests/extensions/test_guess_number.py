"""Guess-the-number, end to end: registered as a game, played by a scripted reasoner through the
ReAct loop and the ToolRegistry, one round per group."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import pytest

from runtime.episodes import (
    Episode,
    EpisodeSettings,
    OutcomeKind,
    Reply,
    ScriptedReasoner,
    ToolCall,
    run_episode,
)
from runtime.extensions import ExtensionRegistry, GameContext, Scope
from runtime.extensions.games.guess_number import GuessArgs, GuessNumberGame, StartArgs
from runtime.kernel.clock import ManualClock
from runtime.kernel.lexicon import DynamicLexicon, LexiconKey, LexiconScope
from runtime.tools import ToolContext, ToolErrorKind, ToolRegistry, ToolSpec

SETTINGS = EpisodeSettings(max_steps=12, time_limit=60.0, max_consecutive_failures=3)


def ctx(chat: str, user: str, args: object = None) -> GameContext:
    return GameContext(chat_id=chat, user_id=user, args=args)


class Fixed(random.Random):
    """A "random" source that always picks ``secret``."""

    def __init__(self, secret: int) -> None:
        super().__init__(0)
        self.secret = secret

    def randint(self, a: int, b: int) -> int:
        return self.secret


def test_rules_higher_lower_correct() -> None:
    game = GuessNumberGame(rng=Fixed(6))
    started = game.start(ctx("group:1", "42", StartArgs(low=1, high=10)))
    assert started["status"] == "started"
    assert started["attempts_left"] == 10
    assert 6 not in json.loads(json.dumps(started)).values()
    higher = game.guess(ctx("group:1", "42", GuessArgs(number=3)))
    assert (higher["status"], higher["known_range"]) == ("higher", [4, 10])
    lower = game.guess(ctx("group:1", "7", GuessArgs(number=8)))
    assert (lower["status"], lower["known_range"]) == ("lower", [4, 7])
    assert lower["last_guesses"][-1] == {"user": "7", "number": 8, "verdict": "lower"}
    won = game.guess(ctx("group:1", "7", GuessArgs(number=6)))
    assert won == {"status": "won", "number": 6, "winner": "7", "attempts": 3}
    assert game.status(ctx("group:1", "7"))["status"] == "no_round"


def test_rounds_are_per_chat_and_attempts_run_out() -> None:
    game = GuessNumberGame(rng=Fixed(500), max_attempts=2)
    game.start(ctx("group:1", "a", StartArgs(low=1, high=1000)))
    assert game.guess(ctx("group:2", "a", GuessArgs(number=5)))["status"] == "no_round"
    again = game.start(ctx("group:1", "b", StartArgs()))
    assert again["status"] == "already_running"
    assert again["range"] == [1, 1000]
    assert game.guess(ctx("group:1", "a", GuessArgs(number=5000)))["status"] == "out_of_range"
    game.guess(ctx("group:1", "a", GuessArgs(number=1)))
    lost = game.guess(ctx("group:1", "b", GuessArgs(number=999)))
    assert (lost["status"], lost["verdict"], lost["number"]) == ("lost", "lower", 500)
    stats = game.statistics()
    assert (stats.active_rounds, stats.started, stats.lost, stats.guesses) == (0, 1, 1, 2)


def test_start_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="greater than low"):
        StartArgs(low=5, high=5)
    with pytest.raises(ValueError, match="at most"):
        StartArgs(low=0, high=1_000_000)


def binary_search(episode: Episode, tools: Sequence[ToolSpec]) -> object:
    """A reasoner step: read the last game answer, guess the middle of the known range, or reply."""
    last = episode.steps[-1].observation
    assert last is not None
    answer = json.loads(last.content)
    if answer["status"] == "won":
        return Reply(f"猜中了！是 {answer['number']}，用了 {answer['attempts']} 次")
    low, high = answer["known_range"]
    return ToolCall("guess_number_guess", {"number": (low + high) // 2})


@pytest.mark.asyncio
async def test_a_scripted_persona_plays_a_round_through_the_registry(
    clock: ManualClock, lexicon: DynamicLexicon
) -> None:
    tools = ToolRegistry()
    registry = ExtensionRegistry(tools, clock=clock, lexicon=lexicon)
    plugin = Scope("games")
    game = GuessNumberGame(rng=random.Random(2026))
    registry.register_game(plugin, game.spec())
    assert lexicon.match("来玩猜数字", [LexiconKey(LexiconScope.GAME, "guess_number")]) != []
    names = ("guess_number_start", "guess_number_guess", "guess_number_status")
    assert registry.game_tools("guess_number") == names
    assert all(name in tools for name in names)

    episode = Episode.start(
        id="ep-1",
        chat_id="group:1",
        now=clock.now(),
        max_steps=SETTINGS.max_steps,
        time_limit=SETTINGS.time_limit,
        user_id="42",
    )
    script: list[object] = [ToolCall("guess_number_start", {"low": 1, "high": 100})] + [binary_search] * 11
    outcome = await run_episode(episode, ScriptedReasoner(script), tools, clock=clock, settings=SETTINGS)

    assert outcome.kind is OutcomeKind.REPLIED
    assert outcome.reply is not None
    assert outcome.reply.startswith("猜中了")
    guesses = [s for s in outcome.episode.steps if getattr(s.action, "name", "") == "guess_number_guess"]
    assert 1 <= len(guesses) <= 7
    assert game.statistics().won == 1

    # The other group never had a round.
    status = await tools.invoke("guess_number_status", {}, ToolContext(chat_id="group:2"))
    assert json.loads(status.content)["status"] == "no_round"

    plugin.dispose()
    gone = await tools.invoke("guess_number_guess", {"number": 3}, ToolContext(chat_id="group:1"))
    assert gone.error is ToolErrorKind.UNKNOWN_TOOL


@pytest.mark.asyncio
async def test_bad_moves_come_back_as_observations_the_persona_can_fix(clock: ManualClock) -> None:
    tools = ToolRegistry()
    registry = ExtensionRegistry(tools, clock=clock)
    registry.register_game(Scope("games"), GuessNumberGame(rng=random.Random(3)).spec())
    episode = Episode.start(id="ep-2", chat_id="group:1", now=clock.now(), max_steps=6, time_limit=60)
    script: list[object] = [
        ToolCall("guess_number_start", {"low": 10, "high": 1}),
        ToolCall("guess_number_start", {}),
        ToolCall("guess_number_guess", {"number": "fifty"}),
        Reply("开始了，猜吧"),
    ]
    outcome = await run_episode(episode, ScriptedReasoner(script), tools, clock=clock, settings=SETTINGS)
    assert outcome.kind is OutcomeKind.REPLIED
    errors = [s.observation.error for s in outcome.episode.steps if s.observation]
    assert errors == ["invalid_arguments", None, "invalid_arguments"]
    first = outcome.episode.steps[0].observation
    assert first is not None
    assert "high must be greater than low" in first.content
