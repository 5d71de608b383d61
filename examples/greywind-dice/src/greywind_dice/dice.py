"""Dice expressions (``2d6``, ``d20``, ``3d8+2``, ``4d6-1``) and rolling them; no GreyWind in here."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

__all__ = ["DiceError", "Roll", "parse", "roll"]

_EXPRESSION = re.compile(r"^\s*(\d*)\s*[dD]\s*(\d+)\s*(?:([+-])\s*(\d+))?\s*$")


class DiceError(ValueError):
    """An expression that is not dice, or asks for more than the limits allow; the text says which."""


@dataclass(frozen=True, slots=True)
class Roll:
    expression: str
    dice: tuple[int, ...]
    modifier: int

    @property
    def total(self) -> int:
        return sum(self.dice) + self.modifier

    def describe(self) -> str:
        shown = "+".join(str(d) for d in self.dice)
        if self.modifier:
            shown += f"{self.modifier:+d}"
        return f"{self.expression} = {self.total}（{shown}）"


def parse(expression: str, *, max_dice: int, max_sides: int) -> tuple[int, int, int]:
    """``"3d8+2"`` -> ``(3, 8, 2)``: count, sides, modifier."""
    match = _EXPRESSION.match(expression)
    if match is None:
        raise DiceError(f"看不懂 {expression!r}：写成 2d6、d20 或 3d8+2 这样")
    count = int(match.group(1) or 1)
    sides = int(match.group(2))
    modifier = int(match.group(4) or 0) * (-1 if match.group(3) == "-" else 1)
    if not 1 <= count <= max_dice:
        raise DiceError(f"一次最多掷 {max_dice} 个骰子")
    if not 2 <= sides <= max_sides:
        raise DiceError(f"骰子要有 2 到 {max_sides} 面")
    return count, sides, modifier


def roll(expression: str, rng: random.Random, *, max_dice: int, max_sides: int) -> Roll:
    count, sides, modifier = parse(expression, max_dice=max_dice, max_sides=max_sides)
    dice = tuple(rng.randint(1, sides) for _ in range(count))
    normal = f"{count}d{sides}" + (f"{modifier:+d}" if modifier else "")
    return Roll(normal, dice, modifier)
