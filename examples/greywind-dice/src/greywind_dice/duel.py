"""The dice duel: one member challenges another, each rolls 1d20 once, the higher roll wins.

Played through two tools the persona may call; the rules see only the ``GameContext`` (chat, user,
arguments). One duel per chat at a time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from runtime.extensions import GameContext, GameSpec, GameTool

__all__ = ["DuelBook"]


class ChallengeArgs(BaseModel):
    opponent: str = Field(min_length=1, max_length=32, description="被挑战的人（QQ 号）")


class NoArgs(BaseModel):
    pass


@dataclass(slots=True)
class _Duel:
    players: tuple[str, str]
    rolls: dict[str, int] = field(default_factory=dict)


class DuelBook:
    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._duels: dict[str, _Duel] = {}

    def spec(self) -> GameSpec:
        return GameSpec(
            name="dice_duel",
            description="骰子对决：两人各掷一次 d20，点大者胜",
            tools=(
                GameTool("challenge", "发起对决（挑战者是说话的人）", self.challenge, ChallengeArgs),
                GameTool("roll", "对决双方之一掷骰", self.roll, NoArgs),
            ),
            terms=("骰子对决", "掷骰"),
        )

    def challenge(self, game: GameContext) -> dict[str, object]:
        if game.user_id is None:
            return {"ok": False, "error": "不知道是谁发起的"}
        if game.chat_id in self._duels:
            return {
                "ok": False,
                "error": "这里已经有一场对决了",
                "players": self._duels[game.chat_id].players,
            }
        players = (game.user_id, game.args.opponent)
        self._duels[game.chat_id] = _Duel(players)
        return {"ok": True, "players": players}

    def roll(self, game: GameContext) -> dict[str, object]:
        duel = self._duels.get(game.chat_id)
        if duel is None:
            return {"ok": False, "error": "还没有对决，先发起一场"}
        if game.user_id not in duel.players:
            return {"ok": False, "error": "只有对决双方能掷"}
        if game.user_id in duel.rolls:
            return {"ok": False, "error": "你已经掷过了", "rolled": duel.rolls[game.user_id]}
        duel.rolls[game.user_id] = self._rng.randint(1, 20)
        result: dict[str, object] = {"ok": True, "rolled": duel.rolls[game.user_id]}
        if len(duel.rolls) == 2:
            del self._duels[game.chat_id]
            first, second = duel.players
            a, b = duel.rolls[first], duel.rolls[second]
            result["winner"] = None if a == b else (first if a > b else second)
            result["rolls"] = dict(duel.rolls)
        return result
