"""Dice expressions and rolls, on their own."""

from __future__ import annotations

import random

import pytest
from greywind_dice.dice import DiceError, parse, roll

LIMITS = {"max_dice": 20, "max_sides": 1000}


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("2d6", (2, 6, 0)), ("d20", (1, 20, 0)), ("3d8+2", (3, 8, 2)), (" 4 D 6 - 1 ", (4, 6, -1))],
)
def test_expressions_parse(text: str, parsed: tuple[int, int, int]) -> None:
    assert parse(text, **LIMITS) == parsed


@pytest.mark.parametrize(("text", "words"), [("abc", "看不懂"), ("21d6", "最多掷 20"), ("2d1", "2 到 1000")])
def test_bad_expressions_say_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(DiceError, match=words):
        parse(text, **LIMITS)


def test_a_roll_stays_in_range_and_adds_up() -> None:
    rng = random.Random(7)
    for _ in range(200):
        result = roll("3d6+2", rng, **LIMITS)
        assert len(result.dice) == 3
        assert all(1 <= d <= 6 for d in result.dice)
        assert result.total == sum(result.dice) + 2
        assert result.describe().startswith(f"3d6+2 = {result.total}（")
