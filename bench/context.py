"""Context Runtime benchmark: packet build + prompt assembly latency over a full store, and retrieval
recall on a Chinese fixture.

Printed:

- **fill**: ``--messages`` realistic Chinese chat lines (``bench/lexicon.py``'s generator) in
  ``--groups`` groups, conversation threads of ~20 messages, and ``--memories`` memories (chat-,
  thread- and identity-scoped) in the chosen backend (``--backend sqlite``, the default: a fresh file
  in a temporary directory; ``postgresql``: ``$GREYWIND_PG_DSN`` or a throwaway server; or
  ``memory``). ``--backend sqlite,postgresql`` runs each in turn and ends with their recall side by side;
- **latency**: ``--turns`` activations on stored messages through ``ContextRuntime.prepare`` — topic
  thread resolution, session, handoff, conversation dialogue, retrieval, assembly — p50 / p95 / max in
  ms; beside it retrieval alone and assembly alone. Targets: p50 ≤ 15 ms, p95 ≤ 50 ms;
- **recall**: a fixture of planted memories among the noise, queried with 1-character, 2-character
  and 3+-character Chinese words, CJK glued to ASCII, and whole sentences: the share whose planted
  memory is among the retrieved items (at most 5). Target 100%. And the same queries asked from
  another group: planted memories found there (leaks) must be 0.

    .venv/bin/python bench/context.py [--backend sqlite|postgresql|memory[,...]] [--messages 100000]
                                      [--memories 10000] [--groups 20] [--turns 300] [--seed 7] [--db FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._backends import NAMES, bench_store  # noqa: E402
from bench._measure import percentile  # noqa: E402
from runtime.config import parse_config  # noqa: E402
from runtime.context import ChatInfo, RetrievalQuery, context_runtime  # noqa: E402
from runtime.kernel.message import ChatKind, ChatMessage  # noqa: E402
from runtime.store.protocol import Store  # noqa: E402
from runtime.store.records import Memory, ScopeType, StoredMessage  # noqa: E402
from runtime.store.sqlite import DB_FILENAME  # noqa: E402
from runtime.store.text import warm_up  # noqa: E402

START = 1_700_000_000.0

# (query kind, query, planted memory). Each planted memory lives in group:0's chat scope.
FIXTURE: tuple[tuple[str, str, str], ...] = (
    ("1 char", "鲸", "小林上周在青岛海边看到了鲸"),
    ("1 char", "橘", "阿梅家的猫是一只胖橘"),
    ("1 char", "伞", "老王把伞落在三楼会议室了"),
    ("1 char", "鹅", "周末去公园喂了大白鹅"),
    ("1 char", "蝉", "楼下的蝉叫了一整夜没睡好"),
    ("1 char", "茶", "小周只喝乌龙茶不喝咖啡"),
    ("2 chars", "火锅", "周五晚上七点在海底捞吃火锅"),
    ("2 chars", "滑雪", "一月份大家约好去崇礼滑雪"),
    ("2 chars", "驾照", "小陈下个月考驾照科目二"),
    ("2 chars", "搬家", "阿杰月底搬家到浦东"),
    ("2 chars", "钢琴", "小美每周三晚上练钢琴"),
    ("2 chars", "过敏", "老赵对花生过敏，聚餐要注意"),
    ("3+ chars", "向量数据库", "向量数据库先不上，SQLite 够用"),
    ("3+ chars", "机械键盘", "阿杰新买了一把机械键盘，红轴的"),
    ("3+ chars", "哈利波特", "小美在重读哈利波特第三部"),
    ("3+ chars", "马拉松", "老王报名了十一月的上海马拉松"),
    ("3+ chars", "年终总结", "年终总结要在十二月二十号前交"),
    ("3+ chars", "三体", "群主推荐大家去看三体的电视剧"),
    ("CJK+ASCII", "python", "乙在用Python写爬虫抓天气数据"),
    ("CJK+ASCII", "爬虫", "乙在用Python写爬虫抓天气数据"),
    ("CJK+ASCII", "用Python写爬虫", "乙在用Python写爬虫抓天气数据"),
    ("CJK+ASCII", "GitHub", "项目代码都放在GitHub上的私有仓库"),
    ("CJK+ASCII", "塞尔达", "小刘用Switch玩塞尔达玩到凌晨"),
    # Letters glued to digits: the store indexes "iphone15" as one word, so "iphone" alone misses it.
    ("ASCII+digits", "iPhone", "老张刚换了iPhone15，蓝色"),
    ("CJK+ASCII", "Switch", "小刘用Switch玩塞尔达玩到凌晨"),
    ("sentence", "周五吃火锅是几点来着", "周五晚上七点在海底捞吃火锅"),
    ("sentence", "谁对花生过敏啊", "老赵对花生过敏，聚餐要注意"),
    ("sentence", "灰风你还记得阿杰买的键盘是什么轴吗", "阿杰新买了一把机械键盘，红轴的"),
    ("sentence", "老王的伞找到了没", "老王把伞落在三楼会议室了"),
)


def _load_lexicon_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_lexicon", ROOT / "bench" / "lexicon.py")
    if spec is None or spec.loader is None:
        raise RuntimeError("bench/lexicon.py is missing")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_lexicon"] = module
    spec.loader.exec_module(module)
    return module


def row(name: str, times: Sequence[float]) -> str:
    return (
        f"  {name:<22} n={len(times):<5} p50 {percentile(times, 0.5):7.2f} ms   "
        f"p95 {percentile(times, 0.95):7.2f} ms   max {max(times):7.2f} ms"
    )


def make_messages(messages: int, groups: int, seed: int) -> list[StoredMessage]:
    lexbench = _load_lexicon_bench()
    rng = random.Random(seed)
    texts = lexbench.realistic_messages(messages, seed)
    stored: list[StoredMessage] = []
    per_group: dict[int, int] = {}
    for i, text in enumerate(texts):
        g = rng.randrange(groups)
        n = per_group[g] = per_group.get(g, 0) + 1
        stored.append(
            StoredMessage(
                f"group:{g}",
                f"m{i}",
                f"u{rng.randrange(300)}",
                f"群友{rng.randrange(300)}",
                START + i * 2.0,
                text,
                thread_id=f"th-{g}-{n // 20}",
                from_self=rng.random() < 0.05,
            )
        )
    return stored


async def fill(store: Store, stored: list[StoredMessage], memories: int, groups: int, seed: int) -> None:
    lexbench = _load_lexicon_bench()
    rng = random.Random(seed + 2)
    started = time.perf_counter()
    for i in range(0, len(stored), 5_000):
        await store.append_messages(stored[i : i + 5_000])
    print(f"fill: {len(stored):,} messages in {time.perf_counter() - started:.1f} s", end="")
    started = time.perf_counter()
    noise = lexbench.realistic_messages(memories, seed + 1, mean_chars=40)
    for i, text in enumerate(noise):
        roll = rng.random()
        if roll < 0.1:
            scope, scope_id = ScopeType.IDENTITY, ""
        elif roll < 0.4:
            scope, scope_id = ScopeType.THREAD, f"topic-noise-{rng.randrange(200)}"
        else:
            scope, scope_id = ScopeType.CHAT, f"group:{rng.randrange(groups)}"
        await store.upsert_memory(
            Memory(f"noise-{i}", scope, scope_id, "fact", text, rng.random(), START + i)
        )
    for i, content in enumerate(dict.fromkeys(content for _, _, content in FIXTURE)):
        await store.upsert_memory(
            Memory(f"planted-{i}", ScopeType.CHAT, "group:0", "fact", content, 0.5, START + memories + i)
        )
    planted = len({c for _, _, c in FIXTURE})
    print(f"; {memories:,} memories + {planted} planted in {time.perf_counter() - started:.1f} s")


def as_chat_message(m: StoredMessage) -> ChatMessage:
    kind, _, ident = m.chat_id.partition(":")
    return ChatMessage(
        message_id=m.message_id,
        chat_kind=ChatKind(kind),
        chat_ident=ident,
        sender_id=m.sender_id,
        sender_name=m.sender_name,
        time=m.time,
        text=m.text,
        addressed=True,
    )


async def bench_latency(store: Store, stored: Sequence[StoredMessage], turns: int, seed: int) -> None:
    rng = random.Random(seed)
    rt = context_runtime(store, parse_config({}))
    candidates = [m for m in stored if not m.from_self]
    picks = sorted(rng.sample(candidates, turns), key=lambda m: m.time)
    # One warm-up turn: jieba's dictionary and caches load once per process, not per packet.
    await rt.prepare(
        as_chat_message(picks[0]),
        chat=ChatInfo(picks[0].chat_id, "group"),
        now=picks[0].time,
        reason="forced",
    )
    total: list[float] = []
    cpu: list[float] = []
    retrieval: list[float] = []
    assembly: list[float] = []
    tokens: list[int] = []
    for m in picks[1:]:
        chat = ChatInfo(m.chat_id, "group", f"群{m.chat_id}")
        started, started_cpu = time.perf_counter(), time.process_time()
        built, prompt = await rt.prepare(
            as_chat_message(m), chat=chat, now=m.time, reason="forced", conversation_thread_id=m.thread_id
        )
        total.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        tokens.append(prompt.tokens)
        started = time.perf_counter()
        rt.assembler.assemble(built.packet)
        assembly.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        await rt.retrieval.retrieve(
            RetrievalQuery(m.chat_id, m.text, now=m.time, conversation_thread_id=m.thread_id)
        )
        retrieval.append((time.perf_counter() - started) * 1000)
    stats = rt.statistics()
    counts = f"{await store.count_messages():,} messages, {await store.count_memories():,} memories"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"latency ({type(store).__name__}, {counts}; load average {load:.1f} on {os.cpu_count()} CPUs):")
    print(row("prepare (build+assemble)", total) + "   target p50 <= 15, p95 <= 50")
    print(row("  CPU time per prepare", cpu) + "   (all threads: event loop + SQLite)")
    print(row("  retrieval alone", retrieval))
    print(row("  assembly alone", assembly))
    print(
        f"  prompt tokens median {statistics.median(tokens):.0f}, max {max(tokens)} "
        f"(budget {rt.assembler.budget}); "
        f"topic threads resolved {stats.resolver.resolved} ({dict(stats.resolver.by_rule)}); "
        f"sessions created {stats.sessions.created}"
    )


async def bench_recall(store: Store) -> dict[str, list[bool]]:
    rt = context_runtime(store, parse_config({}))
    by_kind: dict[str, list[bool]] = {}
    misses: list[str] = []
    leaks = 0
    for kind, query, content in FIXTURE:
        found = await rt.retrieval.retrieve(RetrievalQuery("group:0", query))
        hit = any(item.content == content for item in found)
        by_kind.setdefault(kind, []).append(hit)
        if not hit:
            misses.append(f"{query!r} -> {content!r}")
        elsewhere = await rt.retrieval.retrieve(RetrievalQuery("group:1", query))
        leaks += sum(1 for item in elsewhere if item.source_id.startswith("planted-"))
    print("recall (planted memory among the retrieved items, at most 5):")
    for kind, hits in by_kind.items():
        print(f"  {kind:<12} {sum(hits):>2}/{len(hits):<2} = {sum(hits) / len(hits):6.1%}")
    every = [h for hits in by_kind.values() for h in hits]
    print(f"  {'all':<12} {sum(every):>2}/{len(every):<2} = {sum(every) / len(every):6.1%}   target 100%")
    print(f"  leaks into another group: {leaks}   target 0")
    for miss in misses:
        print(f"  missed: {miss}")
    by_kind["leaks"] = [True] * leaks
    return by_kind


def print_recall_side_by_side(recalls: dict[str, dict[str, list[bool]]]) -> None:
    names = list(recalls)
    print("recall side by side: " + ", ".join(names))
    kinds = [k for k in next(iter(recalls.values())) if k != "leaks"]
    for kind in [*kinds, "all"]:
        cells = []
        for name in names:
            hits = (
                [h for k, v in recalls[name].items() if k != "leaks" for h in v]
                if kind == "all"
                else recalls[name][kind]
            )
            cells.append(f"{sum(hits):>2}/{len(hits):<2} = {sum(hits) / len(hits):6.1%}")
        print(
            f"  {kind:<12} " + "   ".join(f"{name}: {cell}" for name, cell in zip(names, cells, strict=True))
        )
    print("  leaks        " + "   ".join(f"{name}: {len(recalls[name]['leaks'])}" for name in names))


async def run(args: argparse.Namespace, directory: Path) -> None:
    recalls: dict[str, dict[str, list[bool]]] = {}
    for backend in args.backend.split(","):
        if backend not in NAMES:
            raise SystemExit(f"--backend: unknown {backend!r} (known: {', '.join(NAMES)})")
        print(f"== {backend}")
        path = Path(args.db) if args.db else directory / DB_FILENAME
        reuse = backend == "sqlite" and path.exists()
        async with bench_store(backend, directory, path=path) as store:
            stored = make_messages(args.messages, args.groups, args.seed)
            if reuse:
                print(f"fill: reusing {path} (made with the same --messages/--memories/--groups/--seed)")
            else:
                await fill(store, stored, args.memories, args.groups, args.seed)
            recalls[backend] = await bench_recall(store)
            await bench_latency(store, stored, args.turns, args.seed)
    if len(recalls) > 1:
        print_recall_side_by_side(recalls)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", default="sqlite", help="sqlite, postgresql or memory; or several, a,b")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--db", help="SQLite file to fill once and reuse on later runs (default: a temp file)"
    )
    args = parser.parse_args(argv)
    warm_up()
    with tempfile.TemporaryDirectory(prefix="greywind-bench-") as tmp:
        asyncio.run(run(args, Path(tmp)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
