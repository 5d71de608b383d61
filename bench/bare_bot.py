"""The reference the whole process is measured against: a bare NoneBot2 + OneBot v11 bot.

The same driver (``~fastapi+~websockets``) and adapter as ``bot.py``, no GreyWind at all: one matcher
that answers every message addressed to the bot (``to_me``) at once with ``收到〈tag〉`` (the tag of
the benchmarks' @s, so a send can be matched to its @). It is what a platform bot costs per message
before it does anything of its own; ``bench/side_by_side.py`` drives it and ``bot.py`` with the same
OneBot stream.

It measures its own event loop the way the edge does (a timer that notes how late it wakes, and the
longest full garbage collection) and tells both in answer to ``/lag`` in private, so the two bots'
stalls are read the same way. ``HOST``, ``PORT`` and ``LOG_LEVEL`` are NoneBot's.

    .venv/bin/python bench/bare_bot.py
"""

from __future__ import annotations

import asyncio
import gc
import re
import time

import nonebot
from nonebot import on_message
from nonebot.adapters.onebot.v11 import Adapter, MessageEvent, PrivateMessageEvent
from nonebot.rule import to_me

_TAG = re.compile(r"〈(b\d+)〉")


class Stalls:
    """The longest wake-up lateness of a 50 ms timer, and the longest full collection."""

    def __init__(self) -> None:
        self.worst_ms = 0.0
        self.gc_full = 0
        self.gc_longest_ms = 0.0
        self._gc_started = 0.0

    async def watch(self) -> None:
        while True:
            asked = time.monotonic()
            await asyncio.sleep(0.05)
            self.worst_ms = max(self.worst_ms, (time.monotonic() - asked - 0.05) * 1000)

    def collected(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_full += 1
            self.gc_longest_ms = max(self.gc_longest_ms, (time.perf_counter() - self._gc_started) * 1000)

    def line(self) -> str:
        return (
            f"lag worst {self.worst_ms:.1f} ms; full gc {self.gc_full}, longest {self.gc_longest_ms:.1f} ms"
        )


def main() -> None:
    nonebot.init(driver="~fastapi+~websockets")
    driver = nonebot.get_driver()
    driver.register_adapter(Adapter)
    stalls = Stalls()
    tasks: list[asyncio.Task[None]] = []

    @driver.on_startup
    async def _start() -> None:
        gc.callbacks.append(stalls.collected)
        tasks.append(asyncio.create_task(stalls.watch()))

    answer = on_message(rule=to_me(), priority=1, block=True)

    @answer.handle()
    async def _answer(event: MessageEvent) -> None:
        text = event.get_plaintext()
        if isinstance(event, PrivateMessageEvent) and text.strip() == "/lag":
            await answer.send(stalls.line())
            return
        found = _TAG.search(text)
        await answer.send(f"收到〈{found.group(1)}〉" if found else "收到")

    nonebot.run()


if __name__ == "__main__":
    main()
