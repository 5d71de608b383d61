"""Drive the Runtime directly: a fake edge (tests/support/fake_edge.py, the runtime's ports kept in
lists), a clock the test moves, an SQLite store in ``tmp_path`` and the scripted OpenAI-compatible
server on loopback. No NoneBot: the runtime imports nothing of the edge."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from runtime.app import Runtime
from runtime.config import GreyWindConfig, parse_config
from runtime.extensions.chat_reads import ChatReads
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.ports import EdgeContext
from tests.support.fake_edge import FakeOutbound
from tests.support.openai_server import ScriptedOpenAIServer

START = 1_767_000_000.0  # a fixed wall time (2025-12-29), so day boundaries are stable
SELF_ID = "10001"


class FakeClock:
    def __init__(self, start: float = START) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def make_config(server: ScriptedOpenAIServer | None, **sections: Any) -> GreyWindConfig:
    data: dict[str, Any] = {
        "life": {"enabled": False},
        "outbound": {"max_per_minute": 600, "burst": 100},
        "store": {"flush_interval_ms": 10},
    }
    if server is not None:
        data["models"] = {
            "providers": [
                {
                    "name": "scripted",
                    "base_url": server.base_url,
                    "model": "scripted-model",
                    "roles": ["chat"],
                    "context_window": 32_000,
                    "max_retries": 1,
                    "timeout_ms": 5_000,
                }
            ],
            "retry_backoff_ms": 0,
            "retry_backoff_cap_ms": 0,
            "retry_after_cap_ms": 0,
        }
    for name, values in sections.items():
        data[name] = {**data.get(name, {}), **values}
    return parse_config(data)


@dataclass
class Harness:
    runtime: Runtime
    outbound: FakeOutbound
    clock: FakeClock
    data_dir: Path
    counter: int = 0

    def message(
        self,
        text: str,
        *,
        chat: str = "group:500",
        sender: str = "42",
        name: str = "阿明",
        addressed: bool = False,
        reply_to: str | None = None,
        message_id: str | None = None,
    ) -> ChatMessage:
        self.counter += 1
        kind, _, ident = chat.partition(":")
        return ChatMessage(
            message_id=message_id or f"m{self.counter}",
            chat_kind=ChatKind(kind),
            chat_ident=ident,
            sender_id=sender,
            sender_name=name,
            time=self.clock(),
            text=text,
            mentions=(SELF_ID,) if addressed and kind == "group" else (),
            reply_to=reply_to,
            addressed=addressed or kind == "private",
        )

    async def say(self, text: str, **kwargs: Any) -> ChatMessage:
        message = self.message(text, **kwargs)
        await self.runtime.on_message(message)
        return message

    async def settle(self) -> None:
        """Let what is due run, every started episode finish, and the life sources read the chats a
        tick named (a background task, in real time: the virtual clock must not run ahead of it)."""
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
            self.runtime.loop.run_due()
            await self.runtime.loop.wait_idle()
        await anyio.lowlevel.checkpoint()
        sources = [
            getattr(e.spec.poll, "__self__", None)
            for e in self.runtime.bot.core.extensions.entries("life_source")
        ]
        readers = [reads for s in sources if isinstance(reads := getattr(s, "reads", None), ChatReads)]
        with anyio.fail_after(10):
            while any(reads.busy for reads in readers):  # noqa: ASYNC110 - a background task's state
                await anyio.sleep(0.001)

    async def advance(self, seconds: float, *, step: float = 5.0) -> None:
        """Move the clock forward in steps of at most ``step``, letting what falls due run on the way,
        as the loop's alarm would in real time."""
        left = seconds
        while left > 0:
            moved = min(step, left)
            self.clock.advance(moved)
            left -= moved
            await self.settle()


@asynccontextmanager
async def running(
    config: GreyWindConfig,
    data_dir: Path,
    *,
    clock: FakeClock | None = None,
    outbound: FakeOutbound | None = None,
    shadow: bool = False,
    model: bool = True,
    rename: Callable[[tuple[str, ...]], None] | None = None,
) -> AsyncIterator[Harness]:
    clock = clock or FakeClock()
    outbound = outbound or FakeOutbound()
    outbound.clock = clock
    outbound.shadow_mode = shadow
    edge = EdgeContext(
        config=config,
        config_path=data_dir / "greywind.toml",
        data_dir=data_dir,
        outbound=outbound,
        shadow_mode=shadow,
        model_configured=model,
        superusers=frozenset({"1"}),
        clock=clock,
    )
    if rename is not None:
        edge = replace(edge, rename=rename)
    runtime = Runtime(edge)
    async with anyio.create_task_group() as tg:
        await runtime.start(tg)
        try:
            yield Harness(runtime, outbound, clock, data_dir)
        finally:
            await runtime.stop()
            tg.cancel_scope.cancel()


RunningFactory = Callable[..., Any]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path
