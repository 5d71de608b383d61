"""The edge alone, in process: conversion, commands and mute words, the dispatcher, the outbound.

``bench/edge.py`` measures the whole bot over its WebSocket; this isolates the edge's own cost and
memory. Adapter event models are built from OneBot JSON (a pool of ``--pool`` parsed events, copied with
fresh ids, so pydantic's parse cost is not counted) and handed to :class:`plugins.greywind.edge.Edge`
with a gateway that only counts. Every ``--reply-every`` messages the gateway answers through the
outbound (to a fake bot), so the send path runs too. Printed:

- edge throughput (messages per second through ``handle_message`` to the gateway) and the
  per-message time from ``handle_message`` to ``on_message``, p50 / p95;
- the process's RSS and the edge's own structures (sent ids kept, gates, queues) at each tenth and
  at the end: bounded, whatever the number of messages.

    .venv/bin/python bench/edge_alone.py [--messages 1000000] [--groups 200] [--pool 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import nonebot  # noqa: E402

nonebot.init(driver="~none")
nonebot.load_plugin("plugins.greywind")

from anyio.abc import TaskGroup  # noqa: E402
from nonebot.adapters.onebot.v11 import Adapter, MessageEvent  # noqa: E402

from bench._measure import rss_mb  # noqa: E402
from plugins.greywind.commands import RuntimeControl  # noqa: E402
from plugins.greywind.edge import Edge  # noqa: E402
from plugins.greywind.gateway import EdgeContext, EdgeControl  # noqa: E402
from plugins.greywind.notices import Notice  # noqa: E402
from runtime.config import parse_config  # noqa: E402
from runtime.kernel.message import ChatMessage  # noqa: E402
from runtime.logs import configure_logging  # noqa: E402
from tests.support import onebot_events as ob  # noqa: E402

SELF_ID = 10_000
CHATTER = [
    "今天吃什么",
    "哈哈哈哈",
    "有人打游戏吗",
    "这个报错怎么解决",
    "明天开会吗",
    "好的收到",
    "周末去爬山吧",
]


class FakeBot:
    def __init__(self) -> None:
        self.sent = 0

    async def call_api(self, api: str, **data: Any) -> Any:
        self.sent += 1
        return {"message_id": 10_000_000 + self.sent}


class CountingGateway:
    reply_every = 0

    def __init__(self, edge: EdgeContext) -> None:
        self.edge = edge
        self.count = 0
        self.lag: list[float] = []
        self._control = EdgeControl(edge)
        self.handed: dict[str, float] = {}

    @property
    def control(self) -> RuntimeControl:
        return self._control

    async def start(self, task_group: TaskGroup) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def on_message(self, message: ChatMessage) -> None:
        self.count += 1
        started = self.handed.pop(message.message_id, None)
        if started is not None:
            self.lag.append((time.perf_counter() - started) * 1000)
        if self.reply_every and self.count % self.reply_every == 0:
            await self.edge.outbound.send(
                message.chat_id, "收到，" + message.text[:50], reply_to=message.message_id
            )

    async def on_notice(self, notice: Notice) -> None:
        return None


async def run(args: argparse.Namespace) -> None:
    configure_logging(level="WARNING")  # one line per addressed message would measure the terminal
    rng = random.Random(args.seed)
    pool: list[MessageEvent] = []
    for n in range(args.pool):
        segments = [ob.text(rng.choice(CHATTER))]
        if n % 10 == 0:
            segments = [ob.at(SELF_ID), ob.text(" " + rng.choice(CHATTER))]
        payload = ob.group_message(
            self_id=SELF_ID,
            group_id=700_000 + n % args.groups,
            user_id=rng.randrange(1, 500),
            message=segments,
        )
        event = Adapter.json_to_event(payload)
        assert isinstance(event, MessageEvent)
        pool.append(event)

    CountingGateway.reply_every = args.reply_every
    config = parse_config({"outbound": {"max_per_minute": 600, "burst": 100}})
    env = {"GREYWIND_LLM_BASE_URL": "http://127.0.0.1:9/v1", "GREYWIND_LLM_MODEL": "m"}
    with tempfile.TemporaryDirectory() as tmp:
        edge = Edge(
            config, config_path=Path(tmp) / "c.toml", data_dir=Path(tmp), env=env, factory=CountingGateway
        )
        bot = FakeBot()
        edge.bot_connected(str(SELF_ID), bot)
        await edge.start()
        gateway = edge.gateway
        assert isinstance(gateway, CountingGateway)
        edge.outbound.bucket = type(edge.outbound.bucket)(10**6, 10**6)  # measure the edge, not the QQ limit
        memory = [("start", rss_mb())]
        tenth = max(1, args.messages // 10)
        started = time.perf_counter()
        for i in range(args.messages):
            event = pool[i % len(pool)].model_copy(update={"message_id": i + 1})
            if i % 97 == 0:  # sample the lag on a few
                gateway.handed[str(i + 1)] = time.perf_counter()
            await edge.handle_message(event)
            if (i + 1) % tenth == 0:
                await edge.dispatcher.wait_idle()
                memory.append((f"{i + 1:,}", rss_mb()))
        await edge.dispatcher.wait_idle()
        elapsed = time.perf_counter() - started
        stats = edge.statistics()
        kept_ids = len(edge.outbound._own_ids)
        await edge.stop()
    lag = gateway.lag
    rate = args.messages / elapsed
    print(f"messages {args.messages:,} in {elapsed:.1f} s: {rate:,.0f} msg/s through the edge")
    if lag:
        ordered = sorted(lag)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        p50 = statistics.median(lag)
        print(f"handle_message -> on_message: p50 {p50:.3f} ms  p95 {p95:.3f} ms (n={len(lag)})")
    print(
        f"runtime got {gateway.count:,}; sent {bot.sent:,} parts; sent ids kept {kept_ids} (cap 4,096); "
        f"dispatcher max backlog per queue {stats.dispatcher.max_queued}; "
        f"failed jobs {stats.dispatcher.failed}"
    )
    print("RSS (MB): " + ", ".join(f"{label} {mb:.1f}" for label, mb in memory))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--pool", type=int, default=2_000)
    parser.add_argument("--reply-every", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    asyncio.run(run(parser.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
