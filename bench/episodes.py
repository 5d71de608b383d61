"""Episodes, tools and the LifeDirector: the runtime's own overhead, without any model.

Prints medians over several runs of:

- ``ToolRegistry.invoke`` of a synchronous tool with pydantic-validated arguments (µs per call);
- ``run_episode`` with a scripted reasoner: five tool steps then a reply (µs per episode);
- ``WaitingRoom.note_message`` with many parked episodes over many chats (µs per message);
- ``LifeDirector.tick`` with many life sources and live chats (ms per tick), proposals going into the
  real scheduler.

    .venv/bin/python bench/episodes.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import structlog
from pydantic import BaseModel

from runtime.episodes import (
    Episode,
    EpisodeSettings,
    Reply,
    ScriptedReasoner,
    ToolCall,
    WaitingRoom,
    run_episode,
)
from runtime.episodes.episode import EpisodeStatus
from runtime.extensions import (
    ChatActivityLog,
    ExtensionRegistry,
    LifeContext,
    LifeDirector,
    LifeSettings,
    LifeSourceSpec,
    Proposal,
    Scope,
)
from runtime.kernel.clock import ManualClock
from runtime.kernel.kernel import Kernel
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings
from runtime.tools import ToolContext, ToolRegistry, ToolSpec

NOON = 1_764_388_800.0  # 2025-11-29 12:00 Asia/Shanghai


class AddArgs(BaseModel):
    a: int
    b: int


def tools() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(
        ToolSpec(
            name="add", description="Add.", args_model=AddArgs, execute=lambda args, ctx: args.a + args.b
        )
    )
    return registry


def timed(runs: int, body: Callable[[], float]) -> float:
    return statistics.median(body() for _ in range(runs))


def bench_invoke(n: int = 20_000) -> float:
    registry = tools()
    ctx = ToolContext(chat_id="group:1")

    async def go() -> float:
        start = time.perf_counter()
        for i in range(n):
            await registry.invoke("add", {"a": i, "b": 1}, ctx)
        return (time.perf_counter() - start) / n * 1e6

    return asyncio.run(go())


def bench_episode(n: int = 2_000) -> float:
    registry = tools()
    clock = ManualClock(NOON)
    settings = EpisodeSettings()

    async def go() -> float:
        start = time.perf_counter()
        for i in range(n):
            script: list[object] = [ToolCall("add", {"a": i, "b": k}) for k in range(5)] + [Reply("ok")]
            episode = Episode.start(
                id=f"ep-{i}", chat_id="group:1", now=clock.now(), max_steps=8, time_limit=60
            )
            await run_episode(episode, ScriptedReasoner(script), registry, clock=clock, settings=settings)
        return (time.perf_counter() - start) / n * 1e6

    return asyncio.run(go())


def bench_waiting(parked: int = 20_000, chats: int = 2_000, messages: int = 20_000) -> float:
    room = WaitingRoom(Kernel(KernelSettings(self_ids=("10001",))), EpisodeSettings())
    for i in range(parked):
        episode = Episode.start(
            id=f"ep-{i}",
            chat_id=f"group:{i % chats}",
            now=NOON,
            max_steps=8,
            time_limit=60,
            thread_id=f"th-{i}",
        )
        waiting = episode.transition(EpisodeStatus.THINKING, NOON).transition(EpisodeStatus.WAITING, NOON)
        room.park(replace(waiting, wait_until=NOON + 3_600), NOON)
    msgs = [
        ChatMessage(
            message_id=f"m{i}",
            chat_kind=ChatKind.GROUP,
            chat_ident=str(i % chats),
            sender_id="7",
            sender_name="u",
            time=NOON + 1,
            text="hi",
        )
        for i in range(messages)
    ]
    start = time.perf_counter()
    for i, message in enumerate(msgs):
        room.note_message(message, f"th-{i % parked}", NOON + 1 + i * 1e-3)
    return (time.perf_counter() - start) / messages * 1e6


def bench_tick(sources: int = 50, chats: int = 2_000, ticks: int = 20) -> float:
    clock = ManualClock(NOON)
    registry = ExtensionRegistry(ToolRegistry(), clock=clock)
    activity = ChatActivityLog()
    for i in range(chats):
        activity.note(
            ChatMessage(
                message_id=f"m{i}",
                chat_kind=ChatKind.GROUP,
                chat_ident=str(i),
                sender_id="7",
                sender_name="u",
                time=NOON,
                text="hi",
            )
        )
    sink = Kernel(KernelSettings(self_ids=("10001",)))
    director = LifeDirector(
        registry, sink, activity, clock=clock, settings=LifeSettings(max_proposals_per_tick=1_000, tick=1.0)
    )
    plugin = Scope("bench")
    for s in range(sources):

        def poll(ctx: LifeContext, s: int = s) -> list[Proposal]:
            return [Proposal(ctx.active_chats[(s * 7 + int(ctx.now)) % len(ctx.active_chats)], "bench")]

        registry.register_life_source(plugin, LifeSourceSpec(f"source_{s}", poll, 1.0))

    async def go() -> float:
        times = []
        for _ in range(ticks):
            clock.advance(1.0)
            start = time.perf_counter()
            await director.tick()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    # Per-episode and per-proposal info lines would measure the console, not the runtime.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    print(f"tool invoke (sync, pydantic args)        {timed(runs, bench_invoke):8.1f} µs/call")
    print(f"run_episode (5 tool steps + reply)       {timed(runs, bench_episode):8.1f} µs/episode")
    print(f"waiting room note_message (20k parked)   {timed(runs, bench_waiting):8.2f} µs/message")
    print(f"life tick (50 sources, 2000 live chats)  {timed(runs, bench_tick):8.2f} ms/tick")


if __name__ == "__main__":
    main()
