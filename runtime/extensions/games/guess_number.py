"""Guess the number: one round per chat, played through three tools.

``guess_number_start(low, high)`` picks a secret, ``guess_number_guess(number)`` answers higher /
lower / correct, ``guess_number_status()`` tells the round so far. Anyone in the chat may guess; a
round ends when someone hits the number or the attempts run out. The rules see only the
``GameContext`` (chat, user, arguments) — whether and how to play along is the persona's business.
Results are small dicts the persona can put into its own words.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from runtime.extensions.spec import GameContext, GameSpec, GameTool

NAME = "guess_number"
MAX_SPAN = 10_000


class StartArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    low: int = Field(default=1, ge=-1_000_000, le=1_000_000, description="Smallest possible number.")
    high: int = Field(default=100, ge=-1_000_000, le=1_000_000, description="Largest possible number.")

    @model_validator(mode="after")
    def _span(self) -> StartArgs:
        if self.high <= self.low:
            raise ValueError("high must be greater than low")
        if self.high - self.low > MAX_SPAN:
            raise ValueError(f"the range may span at most {MAX_SPAN} numbers")
        return self


class GuessArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    number: int = Field(description="The guessed number.")


@dataclass(slots=True)
class _Round:
    secret: int
    low: int
    high: int
    started_by: str | None
    max_attempts: int
    attempts: int = 0
    # The narrowed range the guesses so far have proved.
    known_low: int = 0
    known_high: int = 0
    guesses: list[tuple[str | None, int, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class GuessNumberStatistics:
    active_rounds: int
    started: int
    won: int
    lost: int
    guesses: int


class GuessNumberGame:
    """The game's rules and per-chat rounds. ``rng`` is injectable for reproducible tests."""

    def __init__(self, *, rng: random.Random | None = None, max_attempts: int = 10) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._rng = rng or random.Random()
        self._max_attempts = max_attempts
        self._rounds: dict[str, _Round] = {}
        self._counts = {"started": 0, "won": 0, "lost": 0, "guesses": 0}

    def spec(self) -> GameSpec:
        return GameSpec(
            name=NAME,
            description="猜数字 (guess the number), one round per chat",
            tools=(
                GameTool(
                    "start",
                    "Start a round: pick a secret number in [low, high].",
                    self.start,
                    args_model=StartArgs,
                ),
                GameTool(
                    "guess", "Guess the secret number of this chat's round.", self.guess, args_model=GuessArgs
                ),
                GameTool(
                    "status",
                    "Show this chat's round: known range and attempts left.",
                    self.status,
                    side_effect=False,
                ),
            ),
            terms=("猜数字", "猜数"),
        )

    def start(self, ctx: GameContext) -> dict[str, Any]:
        args: StartArgs = ctx.args
        current = self._rounds.get(ctx.chat_id)
        if current is not None:
            return {"status": "already_running", **self._view(current)}
        secret = self._rng.randint(args.low, args.high)
        game = _Round(
            secret=secret,
            low=args.low,
            high=args.high,
            started_by=ctx.user_id,
            max_attempts=self._max_attempts,
            known_low=args.low,
            known_high=args.high,
        )
        self._rounds[ctx.chat_id] = game
        self._counts["started"] += 1
        return {"status": "started", **self._view(game)}

    def guess(self, ctx: GameContext) -> dict[str, Any]:
        args: GuessArgs = ctx.args
        game = self._rounds.get(ctx.chat_id)
        if game is None:
            return {"status": "no_round", "hint": f"start one with {NAME}_start"}
        if not game.low <= args.number <= game.high:
            return {
                "status": "out_of_range",
                "hint": f"guess between {game.low} and {game.high}",
                **self._view(game),
            }
        game.attempts += 1
        self._counts["guesses"] += 1
        if args.number == game.secret:
            verdict = "correct"
        elif args.number < game.secret:
            verdict = "higher"
            game.known_low = max(game.known_low, args.number + 1)
        else:
            verdict = "lower"
            game.known_high = min(game.known_high, args.number - 1)
        game.guesses.append((ctx.user_id, args.number, verdict))
        if verdict == "correct":
            del self._rounds[ctx.chat_id]
            self._counts["won"] += 1
            return {"status": "won", "number": game.secret, "winner": ctx.user_id, "attempts": game.attempts}
        if game.attempts >= game.max_attempts:
            del self._rounds[ctx.chat_id]
            self._counts["lost"] += 1
            return {"status": "lost", "verdict": verdict, "number": game.secret, "attempts": game.attempts}
        return {"status": verdict, **self._view(game)}

    def status(self, ctx: GameContext) -> dict[str, Any]:
        game = self._rounds.get(ctx.chat_id)
        if game is None:
            return {"status": "no_round", "hint": f"start one with {NAME}_start"}
        return {"status": "running", **self._view(game)}

    def _view(self, game: _Round) -> dict[str, Any]:
        return {
            "range": [game.low, game.high],
            "known_range": [game.known_low, game.known_high],
            "attempts": game.attempts,
            "attempts_left": game.max_attempts - game.attempts,
            "last_guesses": [{"user": u, "number": n, "verdict": v} for u, n, v in game.guesses[-5:]],
        }

    def statistics(self) -> GuessNumberStatistics:
        return GuessNumberStatistics(active_rounds=len(self._rounds), **self._counts)
