"""Extensions that go wrong in every way the loader and the listeners must survive."""

from __future__ import annotations

import time

import anyio

from runtime.extensions.context import ExtensionContext
from runtime.extensions.manifest import Extension
from runtime.kernel.message import ChatMessage
from runtime.tools import ToolSpec

not_an_extension = "just a string"


def _raising_setup(ctx: ExtensionContext) -> None:
    ctx.tool(ToolSpec("half_done", "注册了一半", lambda args, tool: "ok"))
    raise ValueError("setup fell over")


raising_setup = Extension("raising_setup", _raising_setup)


async def _slow_setup(ctx: ExtensionContext) -> None:
    ctx.tool(ToolSpec("slow_half", "注册了一半", lambda args, tool: "ok"))
    await anyio.sleep(30)


slow_setup = Extension("slow_setup", _slow_setup)


def _raising_listener(ctx: ExtensionContext) -> None:
    def listener(message: ChatMessage) -> None:
        raise RuntimeError(f"cannot hear {message.message_id}")

    ctx.listen(listener)


raising_listener = Extension("raising_listener", _raising_listener)


def _hanging_listener(ctx: ExtensionContext) -> None:
    async def listener(message: ChatMessage) -> None:
        await anyio.sleep_forever()

    ctx.listen(listener)


hanging_listener = Extension("hanging_listener", _hanging_listener)


blocking_calls: list[str] = []


def _blocking_listener(ctx: ExtensionContext) -> None:
    def listener(message: ChatMessage) -> None:
        blocking_calls.append(message.text)
        time.sleep(0.5)  # a plain function that blocks: it must not block the event loop

    ctx.listen(listener)


blocking_listener = Extension("blocking_listener", _blocking_listener)


def _raising_task(ctx: ExtensionContext) -> None:
    async def work() -> None:
        raise RuntimeError("the task fell over")

    ctx.spawn("work", work)


raising_task = Extension("raising_task", _raising_task)
