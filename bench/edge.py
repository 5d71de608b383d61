"""Edge benchmark: the real ``bot.py`` over its real reverse WebSocket, 200 groups posting at once.

A test-side OneBot peer (``tests/e2e/onebot_peer.py``) posts chatter for ``--groups`` groups,
interleaved on one connection as an account in many groups sees it, at ``--rate`` messages per second
until ``--messages`` are posted. Meanwhile it sends a superuser probe (``/status`` in a random group)
every ``--probe-interval`` seconds; the bot answers it through the whole edge path — adapter, matcher,
conversion, the per-chat dispatcher queue (behind that group's chatter), the command, the outbound
rate limiter, the API call back over the WebSocket. Printed:

- **probe round trip** (event posted -> send call received by the peer), p50 / p95 / max in ms: the
  edge's share of "event receipt -> model request" and "model answer -> send call" together, with no
  model in between. Target p95 <= 50 ms.
- **throughput**: messages per second the bot absorbed, and **lost** = posted - counted by the bot
  (read from its own ``/status`` at the end). Target 0.
- **memory**: the bot process's RSS at start, after each tenth of the run, and at the end (bounded:
  the edge keeps only per-chat gates, 4,096 sent ids and bounded queues).

The runtime behind the edge is the logging stand-in until one is wired, so no model is called.

    .venv/bin/python bench/edge.py [--groups 200] [--messages 20000] [--rate 500] [--probe-interval 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.e2e.bot_process import BotProcess  # noqa: E402
from tests.e2e.onebot_peer import ApiCall, OneBotPeer  # noqa: E402
from tests.support import onebot_events as ob  # noqa: E402

SELF_ID = 10_000
ADMIN = 4_242
CONFIG = """
[outbound]
max_per_minute = 600
burst = 100

[bot]
max_inflight = 64
"""
CHATTER = [
    "今天吃什么",
    "哈哈哈哈",
    "有人打游戏吗",
    "这个报错怎么解决",
    "[图片]来了",
    "明天开会吗",
    "好的收到",
]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    groups = [700_000 + n for n in range(args.groups)]
    with tempfile.TemporaryDirectory(prefix="greywind-bench-") as tmp:
        bot = BotProcess(
            Path(tmp),
            config=CONFIG,
            env={
                "SUPERUSERS": f'["{ADMIN}"]',
                "LOG_LEVEL": "WARNING",
                # A model "is configured" so the edge is not in shadow mode; nothing calls it.
                "GREYWIND_LLM_BASE_URL": "http://127.0.0.1:9/v1",
                "GREYWIND_LLM_MODEL": "bench",
            },
        )
        bot.start()
        assert bot.pid is not None
        pid = bot.pid
        memory = [("start", rss_mb(pid))]
        probes: dict[str, float] = {}
        posted = 0
        try:
            async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
                await asyncio.sleep(0.5)  # connected and ready
                started = time.monotonic()
                next_probe = started
                tenth = max(1, args.messages // 10)
                while posted < args.messages:
                    # Evenly paced at --rate, groups taking turns: message i is due at start + i / rate.
                    ahead = started + posted / args.rate - time.monotonic()
                    if ahead > 0:
                        await asyncio.sleep(ahead)
                    group = groups[posted % len(groups)]
                    text = rng.choice(CHATTER)
                    await peer.post(
                        ob.group_message(
                            self_id=SELF_ID,
                            group_id=group,
                            user_id=rng.randrange(1, 500),
                            message=[ob.text(text)],
                        )
                    )
                    posted += 1
                    if posted % tenth == 0:
                        memory.append((f"{posted:,}", rss_mb(pid)))
                    now = time.monotonic()
                    if now >= next_probe:
                        probe = ob.group_message(
                            self_id=SELF_ID,
                            group_id=rng.choice(groups),
                            user_id=ADMIN,
                            message=[ob.text("/status")],
                        )
                        probes[str(probe["message_id"])] = now
                        await peer.post(probe)
                        next_probe = now + args.probe_interval
                elapsed_post = time.monotonic() - started

                def quoted(call: ApiCall) -> str | None:
                    for seg in call.segments:
                        if seg.get("type") == "reply":
                            return str(seg.get("data", {}).get("id"))
                    return None

                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    answered = {quoted(c) for c in peer.sends()}
                    if all(p in answered for p in probes):
                        break
                    await asyncio.sleep(0.05)
                absorbed = time.monotonic() - started
                rtts = [
                    (c.at - probes[q]) * 1000
                    for c in peer.sends()
                    if (q := quoted(c)) is not None and q in probes
                ]
                # The bot's own count, through the product's /status; asked again while a backlog drains.
                counted, asked = -1, 0
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    before = len(peer.calls)
                    asked += 1
                    await peer.post(
                        ob.private_message(self_id=SELF_ID, user_id=ADMIN, message=[ob.text("/status")])
                    )
                    status = await peer.wait_for_call("send_private_msg", after=before, within=120)
                    match = re.search(r"收到消息 (\d+)", status.text)
                    counted = int(match.group(1)) if match else -1
                    if counted >= posted + len(probes) + asked:
                        break
                    await asyncio.sleep(1.0)
                memory.append(("end", rss_mb(pid)))
        finally:
            code = bot.stop()
    expected = posted + len(probes) + asked
    print(f"groups {args.groups}, messages {posted:,} + {len(probes)} probes, target rate {args.rate}/s")
    print(f"posting took {elapsed_post:.2f} s ({posted / elapsed_post:,.0f} msg/s)", end="; ")
    print(f"{len(rtts)}/{len(probes)} probes answered {absorbed:.2f} s after the first message")
    if rtts:
        print(
            f"probe round trip (event posted -> send call): n={len(rtts)} "
            f"p50 {statistics.median(rtts):.1f} ms  p95 {percentile(rtts, 0.95):.1f} ms  "
            f"max {max(rtts):.1f} ms  (answered {len(rtts)}/{len(probes)})"
        )
    print(f"bot counted {counted:,} messages, expected {expected:,}: lost {expected - counted}")
    print("bot RSS (MB): " + ", ".join(f"{label} {mb:.1f}" for label, mb in memory))
    print(f"exit status after SIGTERM: {code}")
    return 0 if counted == expected and code == 0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument(
        "--rate", type=float, default=500.0, help="chatter messages per second, all groups together"
    )
    parser.add_argument("--probe-interval", type=float, default=0.2, help="seconds between superuser probes")
    parser.add_argument("--seed", type=int, default=7)
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
