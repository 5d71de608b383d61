"""Segmentation for the full-text index: jieba against rjieba, per message and as the event loop feels it.

Printed:

- **µs per message** of :func:`runtime.store.text.index_text` (cut, index words, char tokens) with
  pure-Python jieba and with the compiled segmenter, over the replay fixtures and the project's
  Chinese prose, ``bench/lexicon.py``'s realistic chat lines, and the IRC chat logs in
  ``../shared/data`` where they are;
- **the loop beside the writer**: a thread indexes messages non-stop while the main thread sleeps
  1 ms at a time (what an event loop does between events); how late those wake-ups are (p50, mean,
  p99) and how many there were, for no thread, each segmenter, and two controls (a thread hashing
  in C, which releases the GIL, and a pure-Python loop, which does not).

    .venv/bin/python bench/segmenter.py [--seconds 2]
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import structlog

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import lexicon as lexbench  # noqa: E402
from bench._measure import percentile  # noqa: E402
from runtime.store import segmenter, text  # noqa: E402
from tests.store.test_segmenter import IRC, irc_chat, project_chat  # noqa: E402


def use(name: str) -> None:
    """Point the store's segmenter at ``name`` ("jieba" or "rjieba") for this process."""
    chosen = segmenter._Segmenter()
    if name == "jieba":
        chosen.load(import_module=lambda _: (_ for _ in ()).throw(ImportError("benchmarking jieba")))
    else:
        chosen.load()
    assert chosen.name == name, chosen.name
    segmenter._SEGMENTER.cut_for_search, segmenter._SEGMENTER.cut = chosen.cut_for_search, chosen.cut


def per_message_us(texts: Sequence[str]) -> float:
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        for t in texts:
            text.index_text(t)
        runs.append((time.perf_counter() - started) / len(texts) * 1e6)
    return min(runs)


def lateness(work: Callable[[], object] | None, seconds: float) -> tuple[float, float, float, int]:
    stop = threading.Event()

    def worker() -> None:
        while not stop.is_set():
            work()  # type: ignore[misc]

    thread = threading.Thread(target=worker) if work else None
    if thread:
        thread.start()
    late: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        started = time.perf_counter()
        time.sleep(0.001)
        late.append((time.perf_counter() - started - 0.001) * 1e3)
    stop.set()
    if thread:
        thread.join()
    return percentile(late, 0.5), statistics.mean(late), percentile(late, 0.99), len(late)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per lateness row")
    args = parser.parse_args(argv)
    # use() switches segmenters by loading them again: their "store.segmenter" lines are not news here.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    segmenter.warm_up()
    corpora = {
        "project chat and prose": project_chat(),
        "realistic chat (bench/lexicon.py)": lexbench.realistic_messages(5_000, 7),
    }
    if IRC.is_dir():
        corpora["IRC chat logs (../shared/data)"] = irc_chat(every=2)
    print("index_text, µs per message (best of 3):")
    for label, texts in corpora.items():
        times = {}
        for name in ("jieba", "rjieba"):
            use(name)
            times[name] = per_message_us(texts)
        mean = statistics.mean(map(len, texts))
        print(
            f"  {label:34s} {len(texts):6,} msgs, {mean:4.0f} chars: jieba {times['jieba']:6.1f}"
            f"  rjieba {times['rjieba']:5.1f}  ({times['jieba'] / times['rjieba']:.1f}x)"
        )
    chat = corpora["realistic chat (bench/lexicon.py)"]
    batch = chat[:50]
    buffer = b"x" * 200_000

    def index_batch() -> None:
        for t in batch:
            text.index_text(t)

    def spin() -> None:
        total = 0
        for i in range(5_000):
            total += i

    interval = sys.getswitchinterval() * 1e3
    print(f"a 1 ms sleep on the main thread while a thread works (switch interval {interval:g} ms):")
    rows: list[tuple[str, Callable[[], object] | None, str | None]] = [
        ("no thread", None, None),
        ("thread: index_text with jieba", index_batch, "jieba"),
        ("thread: index_text with rjieba", index_batch, "rjieba"),
        ("control: sha256 in C (releases)", lambda: hashlib.sha256(buffer).digest(), None),
        ("control: pure-Python loop", spin, None),
    ]
    for label, work, name in rows:
        if name:
            use(name)
        p50, mean, p99, n = lateness(work, args.seconds)
        print(f"  {label:34s} late p50 {p50:5.2f}  mean {mean:5.2f}  p99 {p99:6.2f} ms  ({n:,} wake-ups)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
