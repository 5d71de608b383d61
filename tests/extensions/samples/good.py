"""Well-behaved extensions: ``everything`` registers one of each thing a context offers."""

from __future__ import annotations

import anyio
from pydantic import BaseModel, ConfigDict, Field

from runtime.commands import Command, CommandCall, CommandSpec
from runtime.extensions import ActivitySpec, GameSpec, GameTool, LifeSourceSpec
from runtime.extensions.context import ExtensionContext
from runtime.extensions.manifest import Extension
from runtime.kernel.message import ChatMessage
from runtime.tools import ToolContext, ToolSpec


class EverythingConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    greeting: str = "你好"
    sides: int = Field(default=6, ge=2, le=100)


class Seen:
    """What the extension observed, for the tests to read."""

    messages: list[str] = []  # noqa: RUF012 - a test probe, reset by the tests
    task_started = False
    task_cancelled = False
    config: EverythingConfig | None = None


def _setup(ctx: ExtensionContext) -> None:
    config = ctx.config
    assert isinstance(config, EverythingConfig)
    Seen.config = config

    def hello(args: object, tool: ToolContext) -> str:
        return f"{config.greeting}，{tool.chat_id}"

    ctx.tool(ToolSpec("everything_hello", "打个招呼", hello))
    ctx.game(
        GameSpec(
            "everything_game",
            "一个游戏",
            (GameTool("move", "走一步", lambda game: "moved"),),
            terms=("走一步",),
        )
    )
    ctx.activity(ActivitySpec("everything_reading", lambda life: None, interval=60.0))
    ctx.life_source(LifeSourceSpec("everything_weather", lambda life: None, interval=60.0))
    ctx.terms(("万物理论",))

    def heard(message: ChatMessage) -> None:
        Seen.messages.append(message.text)

    ctx.listen(heard)

    async def roll(command: Command, call: CommandCall) -> str:
        return f"{config.greeting} {' '.join(command.args)}"

    ctx.command(CommandSpec("everything", "{prefix}everything <话>", roll, permission="member"))

    async def forever() -> None:
        Seen.task_started = True
        try:
            await anyio.sleep_forever()
        finally:
            Seen.task_cancelled = True

    ctx.spawn("forever", forever)


everything = Extension("everything", _setup, config=EverythingConfig, description="one of each")


def _quiet(ctx: ExtensionContext) -> None:
    ctx.tool(ToolSpec("quiet_tool", "什么也不做", lambda args, tool: "ok"))


quiet = Extension("quiet", _quiet)
extension = quiet  # the module's default: "tests.extensions.samples.good" loads this one
