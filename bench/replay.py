"""Replay benchmark: how fast ``python -m runtime.replay`` gets through a chat log.

A synthetic Chinese log (seeded; ``--groups`` groups and a few private chats, chatter with @s of the
bot, its name opening some messages, questions and replies) is replayed:

- **engine**: the kernel alone on the virtual clock (``ReplayEngine``: ingest, due, would-speak
  charged, lexicon learning ticks), median msg/s over ``--runs`` runs;
- **full**: what the command line does (engine plus a packet assembled by the Context Runtime over a
  scratch SQLite store for every would-speak), msg/s and packets/s, median over ``--runs`` runs.

No target is set by an issue; the figures say what a tuning loop over a bot's database costs.

    .venv/bin/python bench/replay.py [--messages 20000] [--groups 8] [--runs 3] [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.config import parse_config
from runtime.kernel.settings import KernelSettings
from runtime.logs import configure_logging
from runtime.replay.addressing import Addressing
from runtime.replay.engine import ActivationLine, Maintenance, MessageLine, Outcome
from runtime.replay.packets import PacketAssembler
from runtime.replay.reader import SourceMessage, read_log
from runtime.replay.run import run_replay

WORDS = [
    "今天",
    "吃饭",
    "游戏",
    "代码",
    "报错",
    "周末",
    "电影",
    "天气",
    "火锅",
    "考试",
    "上班",
    "猫",
    "狗",
    "Python",
    "asyncio",
    "部署",
    "服务器",
    "数据库",
    "奶茶",
    "地铁",
    "加班",
    "需求",
    "测试",
    "上线",
    "回滚",
    "日志",
    "爬山",
    "跑步",
    "健身",
    "外卖",
]
ENDINGS = ("", "", "", "吗？", "啊", "哈哈哈", "。", "！", "吧")
T0 = 1767225600.0
SELF_ID = 10000


def synthetic_log(count: int, groups: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    lines: list[str] = []
    t = T0
    last_in_group: dict[int, int] = {}
    for i in range(count):
        t += rng.expovariate(1 / 3.0)
        private = rng.random() < 0.02
        group = None if private else 1000 + rng.randrange(groups)
        user = rng.randrange(1, 200)
        text = "".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) + rng.choice(ENDINGS)
        at = [SELF_ID] if rng.random() < 0.015 else []
        if rng.random() < 0.01:
            text = "灰风，" + text
        reply_to = None
        if group is not None and group in last_in_group and rng.random() < 0.2:
            reply_to = last_in_group[group]
        if group is not None:
            last_in_group[group] = i
        record = {"ts": t, "group_id": group, "user_id": user, "nickname": f"群友{user}", "message_id": i,
                  "text": text, "at": at, "reply_to": reply_to}  # fmt: skip
        lines.append(json.dumps(record, ensure_ascii=False))
    return lines


class Count:
    def __init__(self) -> None:
        self.messages = 0
        self.spoken = 0

    def message(self, line: MessageLine) -> None:
        self.messages += 1

    def activation(self, line: ActivationLine, prompt_tokens: int | None) -> None:
        self.spoken += line.outcome is Outcome.WOULD_SPEAK


async def once(
    messages: Sequence[SourceMessage], settings: KernelSettings, *, packets: bool
) -> tuple[float, Count]:
    cfg = parse_config({})
    count = Count()
    maintenance = Maintenance(cfg.lexicon.learn_interval_ms / 1000, cfg.lexicon.decay_interval_ms / 1000)
    with tempfile.TemporaryDirectory(prefix="greywind-bench-") as scratch:
        assembler = await PacketAssembler.open(cfg, scratch=Path(scratch)) if packets else None
        start = time.perf_counter()
        try:
            await run_replay(
                messages, settings, observers=[count], packets=assembler, maintenance=maintenance
            )
        finally:
            elapsed = time.perf_counter() - start
            if assembler is not None:
                await assembler.aclose()
    return elapsed, count


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    configure_logging(level="WARNING")

    cfg = parse_config({})
    names = (cfg.persona.name, *cfg.persona.aliases)
    messages, problems = read_log(
        synthetic_log(args.messages, args.groups, args.seed), Addressing(str(SELF_ID), names)
    )
    assert not problems, problems[:3]
    settings = KernelSettings.from_config(cfg, self_ids=(str(SELF_ID),))
    print(f"{len(messages):,} messages in {args.groups} groups and private chats, {args.runs} runs each")

    for label, packets in (("engine", False), ("full", True)):
        times: list[float] = []
        count = Count()
        for _ in range(args.runs):
            elapsed, count = asyncio.run(once(messages, settings, packets=packets))
            times.append(elapsed)
        median = statistics.median(times)
        line = f"{label:>6}: {len(messages) / median:>9,.0f} msg/s  (median {median:.2f} s"
        line += f", {count.spoken} would-speak"
        if packets:
            line += f", {count.spoken / median:,.0f} packets/s"
        print(line + ")")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
