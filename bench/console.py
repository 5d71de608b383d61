"""Console benchmark: the live view's update latency and the console's CPU cost at 200 groups x 2 msg/s.

The Runtime runs in this process over the fake edge (``tests/support/fake_edge.py``; shadow mode, no
model: the console's cost is what is measured, not the model's), with a real SQLite store and the
console's application served by uvicorn on loopback, mounted at ``/console`` as the bot mounts it.
Chatter is fed to ``Runtime.on_message`` at ``--groups`` x ``--rate`` messages per second, each text
carrying its feed time. Two phases of ``--seconds`` each:

- **baseline**: the console mounted, nobody watching;
- **watched**: ``--watchers`` live views (server-sent events, one group each, the busiest first) read
  by a separate client process (standing in for the browsers), which notes for each message event
  the time from ``on_message`` to the event parsed.

Printed: this process's CPU% (``time.process_time`` over wall time) in both phases and the
difference (the console's cost), the client's CPU%, and the latency median / p99 / max with the
number of events received and dropped (a dropped line counts the items a slow reader missed).

    .venv/bin/python bench/console.py [--groups 200] [--rate 2] [--seconds 20] [--watchers 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import httpx  # noqa: E402

from bench._measure import percentile  # noqa: E402

WORDS = ["早", "吃了吗", "哈哈哈哈", "今天好冷啊", "下班了", "666", "这个好看", "晚上吃什么", "火锅", "周末"]
PASSWORD = "bench-console-password"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def feed(runtime: Any, groups: int, rate: float, seconds: float, rng: random.Random, start: int) -> int:
    from runtime.kernel.message import ChatKind, ChatMessage

    per_second = groups * rate
    sent = 0
    began = time.perf_counter()
    while (elapsed := time.perf_counter() - began) < seconds:
        due = int(elapsed * per_second)
        while sent < due:
            group = str(800_000 + sent % groups)
            now = time.time()
            text = f"{rng.choice(WORDS)}{rng.choice(WORDS)} @{now:.6f}"
            message = ChatMessage(
                str(start + sent), ChatKind.GROUP, group, str(rng.randrange(3000)), "u", now, text
            )
            await runtime.on_message(message)
            sent += 1
        await asyncio.sleep(0.005)
    return sent


async def server(args: argparse.Namespace) -> None:
    import uvicorn
    from fastapi import FastAPI

    from runtime.app import Runtime
    from runtime.config import parse_config
    from runtime.console.app import console_app
    from runtime.console.auth import Password
    from runtime.ports import ConsoleSite, EdgeContext
    from tests.support.fake_edge import FakeOutbound

    config = parse_config({"life": {"enabled": False}})
    data_dir = Path(tempfile.mkdtemp(prefix="greywind-console-bench-"))
    outbound = FakeOutbound(time.time, shadow_mode=True)
    edge = EdgeContext(
        config=config,
        config_path=data_dir / "x.toml",
        data_dir=data_dir,
        outbound=outbound,
        shadow_mode=True,
        model_configured=False,
        superusers=frozenset(),
    )
    runtime = Runtime(edge)
    rng = random.Random(7)
    port = free_port()
    async with anyio.create_task_group() as tg:
        await runtime.start(tg)
        outer = FastAPI()
        outer.mount(
            "/console",
            console_app(
                ConsoleSite(runtime, edge, "127.0.0.1"), runtime, Password.from_plain(PASSWORD, "bench")
            ),
        )
        web = uvicorn.Server(
            uvicorn.Config(outer, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        )
        tg.start_soon(web.serve)
        while not web.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
            await asyncio.sleep(0.05)
        base = f"http://127.0.0.1:{port}/console"
        async with httpx.AsyncClient() as client:
            login = await client.post(f"{base}/api/login", json={"password": PASSWORD})
            cookie = login.cookies.get("greywind_console")

        print(
            f"console bench: {args.groups} groups x {args.rate:g} msg/s = {args.groups * args.rate:g} msg/s, "
            f"{args.seconds:g} s per phase, {args.watchers} watchers"
        )
        await feed(runtime, args.groups, args.rate, 2.0, rng, 0)  # warm up: every group heard once
        cpu, wall = time.process_time(), time.perf_counter()
        fed = await feed(runtime, args.groups, args.rate, args.seconds, rng, 1_000_000)
        base_cpu = (time.process_time() - cpu) / (time.perf_counter() - wall) * 100
        print(f"baseline (nobody watching): {fed} messages, CPU {base_cpu:.1f}%")

        chats = [f"group:{800_000 + i}" for i in range(args.watchers)]
        client_proc = subprocess.Popen(  # noqa: ASYNC220 - started once, read in a thread
            [
                sys.executable,
                __file__,
                "--client",
                base,
                "--cookie",
                str(cookie),
                "--chats",
                ",".join(chats),
                "--seconds",
                str(args.seconds + 1.5),
            ],
            stdout=subprocess.PIPE,
        )
        await asyncio.sleep(1.0)  # the client connects
        cpu, wall = time.process_time(), time.perf_counter()
        fed = await feed(runtime, args.groups, args.rate, args.seconds, rng, 2_000_000)
        watched_cpu = (time.process_time() - cpu) / (time.perf_counter() - wall) * 100
        out, _ = await anyio.to_thread.run_sync(client_proc.communicate)
        result = json.loads(out.decode())
        latencies = result["latencies"]
        print(
            f"watched ({args.watchers} live views): {fed} messages, CPU {watched_cpu:.1f}% "
            f"(console's cost {watched_cpu - base_cpu:+.1f} points); client process CPU {result['cpu']:.1f}%"
        )
        if latencies:
            print(
                f"live view latency (on_message -> SSE event parsed): n={len(latencies)} "
                f"median {statistics.median(latencies):.1f} ms  p99 {percentile(latencies, 0.99):.1f} ms  "
                f"max {max(latencies):.1f} ms; dropped {result['dropped']}"
            )
        web.should_exit = True
        await runtime.stop()
        tg.cancel_scope.cancel()


async def client(base: str, cookie: str, chats: list[str], seconds: float) -> None:
    latencies: list[float] = []
    dropped = 0

    async def watch(http: httpx.AsyncClient, chat: str) -> None:
        nonlocal dropped
        async with http.stream("GET", f"{base}/api/live/stream", params={"chat": chat}) as response:
            kind = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: ") and kind == "message":
                    item = json.loads(line[6:])
                    stamp = float(item["text"].rpartition("@")[2])
                    latencies.append((time.time() - stamp) * 1000)
                elif line.startswith("data: ") and kind == "dropped":
                    dropped += json.loads(line[6:])["count"]

    cpu = time.process_time()
    wall = time.perf_counter()
    async with httpx.AsyncClient(cookies={"greywind_console": cookie}, timeout=None) as http:
        tasks = [asyncio.create_task(watch(http, chat)) for chat in chats]
        await asyncio.sleep(seconds)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    usage = (time.process_time() - cpu) / (time.perf_counter() - wall) * 100
    print(json.dumps({"latencies": latencies, "dropped": dropped, "cpu": usage}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--rate", type=float, default=2.0, help="messages per second per group")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--cookie", help=argparse.SUPPRESS)
    parser.add_argument("--chats", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        asyncio.run(client(args.client, args.cookie, args.chats.split(","), args.seconds))
        return
    from runtime.logs import configure_logging

    configure_logging(level="WARNING")
    asyncio.run(server(args))


if __name__ == "__main__":
    main()
