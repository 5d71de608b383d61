"""Runtime benchmark: the Runtime driven directly (no NoneBot, no WebSocket), 200 groups at once.

The edge's part is measured by ``bench/edge.py`` and the whole process by ``bench/e2e.py``; this one
isolates the runtime: ``Runtime.on_message`` is called for chatter and @-mentions across ``--groups``
groups at ``--rate`` messages per second, the scripted OpenAI-compatible server (in this process, on
loopback) answers at once, and a fake bot stands in for the connection. Printed, p50 / p95 / max:

- **receipt -> model request**: ``on_message`` called -> the server received the chat request
  (kernel, scheduling, context packet: resolver, session, retrieval, assembly; HTTP);
- inside it, **context packet** (``ContextBuilder.build``: resolver, session, retrieval);
- **model answer -> send call**: the router returned -> the fake bot's ``send_group_msg``
  (reply cleaning, budget, outbound);
- **lost**: @s never answered (target 0), and model requests made for chatter (target 0).

Budgets and the send rate are opened up so they do not queue answers: the spans measure the pipeline.

``--soak N`` instead feeds N chatter messages (no model, as fast as the runtime takes them: the store
writer's back-pressure sets the pace) on a simulated clock advancing 50 ms a message, with the
periodic jobs run every tenth, and prints the process's RSS and the rate: the memory bound.

    .venv/bin/python bench/runtime.py [--groups 200] [--addressed 300] [--chatter-per-at 9] [--rate 300]
    .venv/bin/python bench/runtime.py --soak 400000
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nonebot  # noqa: E402

nonebot.init(driver="~none")
nonebot.load_plugin("plugins.greywind")

from bench._measure import rss_mb  # noqa: E402
from plugins.greywind.gateway import EdgeContext  # noqa: E402
from plugins.greywind.outbound import Account, ChatGates, Outbound, TokenBucket  # noqa: E402
from runtime.app import Runtime  # noqa: E402
from runtime.config import parse_config  # noqa: E402
from runtime.kernel.message import ChatKind, ChatMessage  # noqa: E402
from tests.support.openai_server import ScriptedOpenAIServer  # noqa: E402

CHATTER = [
    "早",
    "吃了吗",
    "哈哈哈哈",
    "今天好冷啊",
    "下班了下班了",
    "[图片]",
    "666",
    "这个好看",
    "晚上吃什么",
]


async def soak(args: argparse.Namespace) -> None:
    config = parse_config({"life": {"enabled": False}})
    data_dir = Path(tempfile.mkdtemp(prefix="greywind-soak-"))
    now = [time.time()]
    outbound = Outbound(bot=lambda _chat: None, bucket=TokenBucket(600, 10), gates=ChatGates())
    edge = EdgeContext(
        config=config,
        config_path=data_dir / "x.toml",
        data_dir=data_dir,
        outbound=outbound,
        shadow_mode=True,
        model_configured=False,
        superusers=frozenset(),
        clock=lambda: now[0],
    )
    runtime = Runtime(edge)
    rng = random.Random(args.seed)
    words = [*CHATTER, "火锅", "周末", "上班", "电影", "代码", "地铁"]
    async with anyio.create_task_group() as tg:
        await runtime.start(tg)
        print(f"soak: {args.soak:,} chatter messages in {args.groups} groups; RSS at start {rss_mb():.0f} MB")
        print(f"{'messages':>10} {'RSS MB':>8} {'msg/s':>8}")
        started = last = time.perf_counter()
        step = max(1, args.soak // 10)
        for index in range(1, args.soak + 1):
            now[0] += 0.05
            text = "".join(rng.choice(words) for _ in range(rng.randint(2, 8)))
            group = str(800_000 + rng.randrange(args.groups))
            await runtime.on_message(
                ChatMessage(str(index), ChatKind.GROUP, group, str(rng.randrange(3000)), "u", now[0], text)
            )
            if index % step == 0:
                await runtime.maintenance.learn()
                await runtime.maintenance.housekeeping()
                at = time.perf_counter()
                print(f"{index:>10,} {rss_mb():>8.0f} {step / (at - last):>8.0f}", flush=True)
                last = at
        rate = args.soak / (time.perf_counter() - started)
        print(f"overall {rate:.0f} msg/s; RSS at the end {rss_mb():.0f} MB")
        await runtime.stop()
        tg.cancel_scope.cancel()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def show(name: str, values: list[float]) -> None:
    ms = [v * 1000 for v in values]
    if not ms:
        print(f"  {name}: n=0")
        return
    print(
        f"  {name}: n={len(ms)}  p50 {statistics.median(ms):.1f} ms  p95 {pct(ms, 0.95):.1f} ms  "
        f"max {max(ms):.1f} ms"
    )


class Bot:
    def __init__(self) -> None:
        self.sent: dict[str, float] = {}
        self.next_id = 1

    async def call_api(self, api: str, **data: Any) -> Any:
        text = "".join(s["data"].get("text", "") for s in data["message"] if s["type"] == "text")
        self.sent.setdefault(text.split("#")[-1] if "#" in text else text, time.perf_counter())
        self.next_id += 1
        return {"message_id": self.next_id}


async def main(args: argparse.Namespace) -> None:
    server = ScriptedOpenAIServer().start()
    asked: dict[str, float] = {}

    def respond(request: Any) -> dict[str, Any]:
        text = request.last_user_text
        tag = text.split("#")[-1] if "#" in text else None
        if tag is not None:
            asked.setdefault(tag, time.perf_counter())
            return {"text": f"收到 #{tag}"}
        return {"tool_calls": [{"name": "observe", "arguments": {"reason": "chatter"}}]}

    server.respond_with(respond)
    config = parse_config(
        {
            "life": {"enabled": False},
            "outbound": {"max_per_minute": 600, "burst": 100},
            "budget": {
                "min_interval_ms": 0,
                "max_per_window": 1000,
                "forced": {"min_interval_ms": 0, "max_per_window": 1000},
            },
            "models": {
                "providers": [
                    {
                        "name": "s",
                        "base_url": server.base_url,
                        "model": "m",
                        "roles": ["chat"],
                        "context_window": 32_000,
                    }
                ]
            },
        }
    )
    bot = Bot()
    data_dir = Path(tempfile.mkdtemp(prefix="greywind-bench-"))
    outbound = Outbound(
        bot=lambda _chat: Account("10000", bot), bucket=TokenBucket(60_000, 10_000), gates=ChatGates()
    )
    edge = EdgeContext(
        config=config,
        config_path=data_dir / "x.toml",
        data_dir=data_dir,
        outbound=outbound,
        shadow_mode=False,
        model_configured=True,
        superusers=frozenset(),
    )
    runtime = Runtime(edge)
    prepare_times: list[float] = []
    returned: dict[str, float] = {}
    received: dict[str, float] = {}
    async with anyio.create_task_group() as tg:
        await runtime.start(tg)
        builder = runtime.context.builder
        original_prepare = builder.build

        async def timed_prepare(*a: Any, **k: Any) -> Any:
            start = time.perf_counter()
            out = await original_prepare(*a, **k)
            prepare_times.append(time.perf_counter() - start)
            return out

        builder.build = timed_prepare  # type: ignore[method-assign]
        original_chat = runtime.router.chat

        async def timed_chat(messages: Any, **k: Any) -> Any:
            result = await original_chat(messages, **k)
            if "#" in result.text:
                returned.setdefault(result.text.split("#")[-1], time.perf_counter())
            return result

        runtime.router.chat = timed_chat  # type: ignore[method-assign]
        rng = random.Random(args.seed)
        total = int(args.addressed * (1 + args.chatter_per_at))
        gap = 1.0 / args.rate
        started = time.perf_counter()
        for index in range(total):
            group = str(700_000 + rng.randrange(args.groups))
            counter = index + 1
            addressed = rng.random() < 1 / (1 + args.chatter_per_at)
            tag = f"p{counter}"
            text = f"灰风 帮我看看这个问题 #{tag}" if addressed else rng.choice(CHATTER)
            message = ChatMessage(
                str(counter),
                ChatKind.GROUP,
                group,
                str(rng.randrange(5000)),
                "u",
                time.time(),
                text,
                addressed=addressed,
            )
            if addressed:
                received[tag] = time.perf_counter()
            await runtime.on_message(message)
            delay = started + (index + 1) * gap - time.perf_counter()
            if delay > 0:
                await anyio.sleep(delay)
        with anyio.move_on_after(30):
            while len(bot.sent) < len(received):  # noqa: ASYNC110 - polling a plain dict
                await anyio.sleep(0.05)
        print(f"runtime: {args.groups} groups, {total} messages ({len(received)} @) at {args.rate:g}/s")
        show("receipt -> model request", [asked[t] - received[t] for t in received if t in asked])
        show("  context packet (ContextBuilder.build)", prepare_times)
        show("model answer -> send call", [bot.sent[t] - returned[t] for t in returned if t in bot.sent])
        lost = [t for t in received if t not in bot.sent]
        chatter_calls = len(server.chat_requests) - len(asked)
        print(f"  lost: {len(lost)} of {len(received)} @; model requests for chatter: {chatter_calls}")
        await runtime.stop()
        tg.cancel_scope.cancel()
    server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--addressed", type=int, default=300)
    parser.add_argument("--chatter-per-at", type=float, default=9.0)
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--soak", type=int, default=0, help="chatter messages for the memory run (0: latency)"
    )
    arguments = parser.parse_args()
    anyio.run(soak if arguments.soak else main, arguments)
