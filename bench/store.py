"""Store benchmark: write throughput through the writer task, full-text query latency at 100,000 messages.

Printed:

- **writer**: ``--messages`` realistic Chinese chat lines (``bench/lexicon.py``'s generator) in
  ``--groups`` groups, put through ``StoreWriter`` into a fresh store of each ``--backend`` (SQLite:
  a file, WAL; PostgreSQL: ``$GREYWIND_PG_DSN`` or a throwaway server; 200 ms flush interval):
  msg/s from the first put to the last commit, median and max batch commit time; beside it,
  segmentation alone (msg/s, jieba's tokens by rjieba or jieba), which bounds the writer;
- **search**: ``search_messages`` over the filled database, p50 / p95 / max in ms, for 1-character,
  2-character and 3+-character Chinese words and CJK glued to ASCII, within one group and across all
  groups (``--queries`` queries per row); plus the share of queries that found something;
- with more than one backend, the figures side by side at the end.

    .venv/bin/python bench/store.py [--backend sqlite,postgresql] [--messages 100000] [--groups 50]
                                    [--queries 300] [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import random
import re
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
from runtime.store import segmenter  # noqa: E402
from runtime.store.protocol import Store  # noqa: E402
from runtime.store.records import StoredMessage  # noqa: E402
from runtime.store.sqlite import DB_FILENAME  # noqa: E402
from runtime.store.text import index_text, warm_up  # noqa: E402
from runtime.store.writer import StoreWriter  # noqa: E402


def _load_lexicon_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_lexicon", ROOT / "bench" / "lexicon.py")
    if spec is None or spec.loader is None:
        raise RuntimeError("bench/lexicon.py is missing")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_lexicon"] = module
    spec.loader.exec_module(module)
    return module


lexbench = _load_lexicon_bench()


_GLUED = re.compile(r"[\u4e00-\u9fff]{1,2}[A-Za-z0-9]+[\u4e00-\u9fff]{0,2}")


def make_messages(n: int, groups: int, seed: int) -> list[StoredMessage]:
    rng = random.Random(seed)
    texts = lexbench.realistic_messages(n, seed)
    start = 1_700_000_000.0
    return [
        StoredMessage(
            f"group:{rng.randrange(groups)}",
            str(i),
            f"u{rng.randrange(500)}",
            "member",
            start + i * 0.5,
            text,
            thread_id=f"th-{i // 20}",
        )
        for i, text in enumerate(texts)
    ]


def make_queries(messages: Sequence[StoredMessage], per_kind: int, seed: int) -> dict[str, list[str]]:
    """Query words drawn from the stored text itself, so most queries have answers."""
    rng = random.Random(seed)
    words, _, _ = lexbench.vocabulary()
    by_len: dict[int, list[str]] = {1: [], 2: [], 3: []}
    sample = " ".join(m.text for m in rng.sample(list(messages), min(2_000, len(messages))))
    for word in rng.sample(list(words), min(60_000, len(words))):
        bucket = min(len(word), 3)
        if len(by_len[bucket]) < per_kind and word in sample:
            by_len[bucket].append(word)
    # CJK glued to ASCII, cut from the stored text: "打cpu都", "说233好".
    glued = list(dict.fromkeys(_GLUED.findall(sample)))
    rng.shuffle(glued)
    return {
        "1 char": by_len[1],
        "2 chars": by_len[2],
        "3+ chars": by_len[3],
        "CJK+ASCII": glued[:per_kind],
    }


async def bench_writer(store: Store, messages: Sequence[StoredMessage], summary: dict[str, str]) -> None:
    batch_times: list[float] = []
    writer = StoreWriter(store, flush_interval=0.2, flush_max_items=500, queue_max=10_000)
    original_write = store.write

    async def timed_write(items: Sequence[object]) -> None:
        started = time.perf_counter()
        await original_write(items)  # type: ignore[arg-type]
        batch_times.append(time.perf_counter() - started)

    store.write = timed_write  # type: ignore[method-assign]
    started = time.perf_counter()
    async with writer:
        for m in messages:
            await writer.put(m)
        await writer.flush()
    elapsed = time.perf_counter() - started
    stats = writer.statistics()
    print(
        f"writer: {len(messages):,} messages in {elapsed:.1f} s = {len(messages) / elapsed:,.0f} msg/s "
        f"({stats.batches} batches, max batch {stats.max_batch}, failures {stats.failures})"
    )
    print(
        f"        batch commit median {statistics.median(batch_times) * 1000:.1f} ms, "
        f"max {max(batch_times) * 1000:.1f} ms"
    )
    summary["write msg/s"] = f"{len(messages) / elapsed:,.0f}"
    summary["batch commit median ms"] = f"{statistics.median(batch_times) * 1000:.1f}"


def bench_segmentation(messages: Sequence[StoredMessage]) -> None:
    sample = [m.text for m in messages[:5_000]]
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        for text in sample:
            index_text(text)
        runs.append(len(sample) / (time.perf_counter() - started))
    rate = statistics.median(runs)
    print(f"        segmentation alone ({segmenter.name()}): {rate:,.0f} msg/s (median of 3)")


async def bench_search(
    store: Store, queries: dict[str, list[str]], groups: int, summary: dict[str, str]
) -> None:
    total = await store.count_messages()
    print(f"search over {total:,} messages (limit 10):")
    header = ("query kind", "scope", "n", "p50 ms", "p95 ms", "max ms", "found")
    print("  {:<11} {:<11} {:>4} {:>8} {:>8} {:>8} {:>6}".format(*header))
    every = [f"group:{g}" for g in range(groups)]
    for kind, words in queries.items():
        for scope in ("one group", "all groups"):
            times: list[float] = []
            found = 0
            for i, word in enumerate(words):
                chats = [f"group:{i % groups}"] if scope == "one group" else every
                started = time.perf_counter()
                hits = await store.search_messages(word, chat_ids=chats, limit=10)
                times.append((time.perf_counter() - started) * 1000)
                found += bool(hits)
            if not times:
                continue
            print(
                f"  {kind:<11} {scope:<11} {len(times):>4} {percentile(times, 0.5):>8.2f} "
                f"{percentile(times, 0.95):>8.2f} {max(times):>8.2f} {found / len(times):>6.0%}"
            )
            summary[f"search {kind}, {scope} p50/p95 ms (found)"] = (
                f"{percentile(times, 0.5):.2f}/{percentile(times, 0.95):.2f} ({found / len(times):.0%})"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", default="sqlite,postgresql", help="sqlite, postgresql, memory; a,b")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    warm_up()
    messages = make_messages(args.messages, args.groups, args.seed)
    queries = make_queries(messages, args.queries, args.seed)
    bench_segmentation(messages)
    summaries: dict[str, dict[str, str]] = {}
    for backend in args.backend.split(","):
        if backend not in NAMES:
            raise SystemExit(f"--backend: unknown {backend!r} (known: {', '.join(NAMES)})")
        print(f"== {backend}")
        summaries[backend] = summary = {}
        with tempfile.TemporaryDirectory(prefix="greywind-bench-") as tmp:
            asyncio.run(run(backend, Path(tmp), messages, queries, args.groups, summary))
            if backend == "sqlite":
                print(f"database file: {(Path(tmp) / DB_FILENAME).stat().st_size / 1e6:.1f} MB")
    if len(summaries) > 1:
        names = list(summaries)
        print("side by side:")
        print(f"  {'':<44}" + "".join(f"{name:>22}" for name in names))
        for key in summaries[names[0]]:
            print(f"  {key:<44}" + "".join(f"{summaries[name].get(key, '-'):>22}" for name in names))
    return 0


async def run(
    backend: str,
    directory: Path,
    messages: Sequence[StoredMessage],
    queries: dict[str, list[str]],
    groups: int,
    summary: dict[str, str],
) -> None:
    async with bench_store(backend, directory) as store:
        await bench_writer(store, messages, summary)
        await bench_search(store, queries, groups, summary)


if __name__ == "__main__":
    raise SystemExit(main())
