"""Edge benchmark: the real ``bot.py`` over its real reverse WebSocket, 200 groups posting at once.

A test-side OneBot peer (``tests/e2e/onebot_peer.py``) posts chatter for ``--groups`` groups,
interleaved on one connection as an account in many groups sees it, evenly paced at ``--rate``
messages per second until ``--messages`` are posted. Every ``--probe-interval`` seconds it also posts a
probe: a message that @-mentions the bot in a random group, tagged ``〈pN〉``. The scripted
OpenAI-compatible server (``tests/support/openai_server.py``, in this process) answers a probe's request
by echoing it (a plain-text answer is a reply) and any other request with the ``observe`` tool.
Printed:

- **receipt -> model request**: probe posted on the WebSocket -> its chat request arrives at the model
  server (adapter, edge, kernel, scheduling, context packet, HTTP), p50 / p95 / max in ms;
- **model answer -> send call**: the model server answered -> the bot's ``send_group_msg`` for that
  probe arrives at the peer (parsing, reply cleaning, budget, outbound limiter, WebSocket);
  target p95 <= 50 ms each, model time excluded (the scripted model answers at once);
- **lost** = messages posted - messages the bot counted (its own ``/status``, asked in private at the
  end, again while a backlog drains). Target 0;
- **memory**: the bot process's RSS at start, after each tenth of the run and at the end;
- model requests for chatter (none of it addresses the bot; the kernel decides what is worth a call).

    .venv/bin/python bench/edge.py [--groups 200] [--messages 20000] [--rate 300] [--probe-interval 0.25]

The rate a single NoneBot process absorbs is bounded by NoneBot's per-event work (on the order of a
thousand events a second on one free core); beyond it events wait in the edge's bounded backlog and
latency grows with the backlog, which ``--rate`` above that shows.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._measure import describe, rss_mb  # noqa: E402
from tests.e2e.bot_process import BotProcess  # noqa: E402
from tests.e2e.onebot_peer import OneBotPeer  # noqa: E402
from tests.support import onebot_events as ob  # noqa: E402
from tests.support.openai_server import ScriptedOpenAIServer  # noqa: E402

SELF_ID = 10_000
ADMIN = 4_242
CONFIG = """
[outbound]
max_per_minute = 600
burst = 100

[budget.forced]
min_interval_ms = 0
max_per_window = 1000
window_ms = 60000
"""
CHATTER = [
    "今天吃什么",
    "哈哈哈哈",
    "有人打游戏吗",
    "这个报错怎么解决",
    "明天开会吗",
    "好的收到",
    "周末去爬山吧",
]
SCRIPT = {
    "rules": [{"when": {"contains": "〈p"}, "reply": {"echo": True}}],
    "default": {"tool_calls": [{"name": "observe", "arguments": {"reason": "bench"}}]},
}
_PROBE = re.compile(r"〈(p\d+)〉")


async def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    groups = [700_000 + n for n in range(args.groups)]
    wall_minus_mono = time.time() - time.monotonic()
    with tempfile.TemporaryDirectory(prefix="greywind-bench-") as tmp, ScriptedOpenAIServer(SCRIPT) as model:
        bot = BotProcess(
            Path(tmp),
            config=CONFIG,
            env={
                "SUPERUSERS": f'["{ADMIN}"]',
                "LOG_LEVEL": "INFO",  # one line per addressed message: the probes' edge timestamps
                "GREYWIND_LLM_BASE_URL": model.base_url,
                "GREYWIND_LLM_MODEL": "scripted",
            },
        )
        bot.start()
        assert bot.pid is not None
        pid = bot.pid
        memory = [("start", rss_mb(pid))]
        probes: dict[str, float] = {}  # tag -> wall time posted
        probe_ids: dict[str, str] = {}  # tag -> message id
        posted = asked = 0
        counted = -1
        status = ""
        try:
            async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
                await asyncio.sleep(1.0)  # connected and registered
                started = time.monotonic()
                next_probe = started
                tenth = max(1, args.messages // 10)
                while posted < args.messages:
                    # Evenly paced: message i is due at start + i / rate; groups take turns.
                    ahead = started + posted / args.rate - time.monotonic()
                    if ahead > 0:
                        await asyncio.sleep(ahead)
                    await peer.say_in_group(
                        groups[posted % len(groups)], rng.randrange(1, 500), rng.choice(CHATTER)
                    )
                    posted += 1
                    if posted % tenth == 0:
                        memory.append((f"{posted:,}", rss_mb(pid)))
                    now = time.monotonic()
                    if now >= next_probe:
                        tag = f"p{len(probes)}"
                        probes[tag] = time.time()
                        said = await peer.say_in_group(
                            rng.choice(groups), 9_999, ob.at(SELF_ID), f" 〈{tag}〉 现在几点"
                        )
                        probe_ids[tag] = str(said)
                        next_probe = now + args.probe_interval
                elapsed = time.monotonic() - started

                def answered() -> dict[str, float]:
                    out: dict[str, float] = {}
                    for call in peer.sends():
                        if (m := _PROBE.search(call.text)) is not None:
                            out.setdefault(m.group(1), call.at + wall_minus_mono)
                    return out

                for _ in range(600):  # up to a minute for the last answers
                    if len(answered()) >= len(probes):
                        break
                    await asyncio.sleep(0.1)
                sends = answered()
                # The bot's own count, through /status in private; asked again while a backlog drains.
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    before = len(peer.calls)
                    asked += 1
                    await peer.say_in_private(ADMIN, "/status")
                    await peer.wait_for_call("send_private_msg", after=before, within=120)
                    await asyncio.sleep(0.3)  # a long status comes in parts
                    status = "\n".join(c.text for c in peer.calls[before:] if c.action == "send_private_msg")
                    match = re.search(r"收到消息 (\d+)", status)
                    counted = int(match.group(1)) if match else -1
                    if counted >= posted + len(probes) + asked:
                        break
                    await asyncio.sleep(1.0)
                memory.append(("end", rss_mb(pid)))
        finally:
            code = bot.stop(timeout=30)
            records = bot.records()
        requests: dict[str, float] = {}
        chatter_requests = 0
        for request in model.chat_requests:
            m = _PROBE.search(request.last_user_text)
            if m is not None:
                requests.setdefault(m.group(1), request.at)
            else:
                chatter_requests += 1

    to_model = [(requests[t] - probes[t]) * 1000 for t in probes if t in requests]
    # Where that time goes: the edge's "addressed" line marks the message converted and queued.
    at_edge = {
        str(r.get("message_id")): datetime.fromisoformat(str(r["timestamp"])).timestamp()
        for r in records
        if r.get("event") == "addressed"
    }
    queued = {t: at_edge[probe_ids[t]] for t in probes if probe_ids.get(t) in at_edge}
    edge_part = [(queued[t] - probes[t]) * 1000 for t in queued]
    runtime_part = [(requests[t] - queued[t]) * 1000 for t in queued if t in requests]
    to_send = [(sends[t] - requests[t]) * 1000 for t in probes if t in sends and t in requests]
    expected = posted + len(probes) + asked
    rate = posted / elapsed
    print(f"groups {args.groups}, chatter {posted:,} + {len(probes)} probes", end=" ")
    print(f"in {elapsed:.1f} s ({rate:,.0f} msg/s)")
    print(describe("receipt -> model request", to_model, len(probes)))
    print("  " + describe("posted -> converted and queued by the edge", edge_part, len(probes)))
    print("  " + describe("queued -> model request (the runtime)", runtime_part, len(probes)))
    if (waits := re.search(r"排队 p50 (\d+) ms p95 (\d+) ms", status)) is not None:
        print(f"    of which in the edge's queues (last 1,024 jobs): p50 {waits[1]} ms  p95 {waits[2]} ms")
    print(describe("model answer -> send call", to_send, len(probes)))
    print(f"model requests for chatter: {chatter_requests}")
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
    parser.add_argument("--rate", type=float, default=300.0, help="chatter messages per second, all groups")
    parser.add_argument("--probe-interval", type=float, default=0.25, help="seconds between probes")
    parser.add_argument("--seed", type=int, default=7)
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
