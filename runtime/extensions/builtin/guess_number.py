"""The guess-number game as an extension; ``[extensions.config.guess_number] max_attempts`` sets how
many guesses a round allows."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from runtime.extensions.context import ExtensionContext
from runtime.extensions.games.guess_number import GuessNumberGame
from runtime.extensions.manifest import Extension

__all__ = ["GuessNumberConfig", "extension"]


class GuessNumberConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=10, ge=1, le=100)


def _setup(ctx: ExtensionContext) -> None:
    config = ctx.config if isinstance(ctx.config, GuessNumberConfig) else GuessNumberConfig()
    ctx.game(GuessNumberGame(max_attempts=config.max_attempts).spec())


extension = Extension("guess_number", _setup, config=GuessNumberConfig, description="猜数字")
