"""greywind-dice: a GreyWind extension with a tool, a command and a game.

GreyWind finds ``extension`` through the ``greywind.extensions`` entry point (see pyproject.toml) and
calls ``setup`` once at start with an ``ExtensionContext``; everything registered through the context
is removed again when the extension is unloaded or the bot stops.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field

from greywind_dice.dice import DiceError, roll
from greywind_dice.duel import DuelBook
from runtime.commands import Command, CommandCall, CommandSpec, Usage
from runtime.extensions import Extension, ExtensionContext
from runtime.tools import ToolContext, ToolSpec

__all__ = ["DiceConfig", "extension"]


class DiceConfig(BaseModel):
    """``[extensions.config.dice]``; unknown keys are refused, naming the key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_dice: int = Field(default=20, ge=1, le=100)
    max_sides: int = Field(default=1000, ge=2, le=1_000_000)
    # Fixes the dice, for tests; unset, every start rolls differently.
    seed: int | None = None


class RollArgs(BaseModel):
    expression: str = Field(default="1d6", max_length=20, description="要掷的骰子，如 2d6、d20、3d8+2")


def setup(ctx: ExtensionContext) -> None:
    config = ctx.config if isinstance(ctx.config, DiceConfig) else DiceConfig()
    rng = random.Random(config.seed)
    limits = {"max_dice": config.max_dice, "max_sides": config.max_sides}

    # 1. A tool the persona may call while it deliberates.
    def dice_roll(args: RollArgs, tool: ToolContext) -> str:
        try:
            return roll(args.expression, rng, **limits).describe()
        except DiceError as exc:
            return str(exc)

    ctx.tool(ToolSpec("dice_roll", "掷骰子，返回每个骰子的点数和总和。", dice_roll, args_model=RollArgs))

    # 2. A command any member may use: parsed here, answered by the bot without a model call.
    def parse_roll(words: list[str], target: str, origin: str) -> Command | Usage:
        expression = "".join(words) or "1d6"
        try:
            roll(expression, random.Random(0), **limits)  # check it now; roll for real when answering
        except DiceError as exc:
            return Usage(f"{exc}（用法：/roll 2d6）")
        return Command("roll", target, (expression,))

    def answer_roll(command: Command, call: CommandCall) -> str:
        return f"{call.by} 掷出 {roll(command.args[0], rng, **limits).describe()}"

    ctx.command(
        CommandSpec(
            "roll",
            "{prefix}roll [2d6]",
            answer_roll,
            parse_roll,
            aliases=("r",),
            permission="member",
        )
    )

    # 3. A game: its moves become the tools dice_duel_challenge and dice_duel_roll.
    ctx.game(DuelBook(rng).spec())


extension = Extension("dice", setup, config=DiceConfig, description="掷骰子：工具、/roll 命令和骰子对决")
