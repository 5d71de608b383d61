"""Indexing messages on a worker thread, as the store's writer does, leaves the event loop free to run.

The writer segments every message for the full-text index in ``asyncio.to_thread``. Pure-Python
jieba held the GIL while it cut, so the loop, wanting the GIL back after each wait, waited out a
whole switch interval behind the writer every time: a context build's reads for an @ crawled while
chat was being stored. Here the loop sleeps 1 ms at a time while a batch of chat messages is
indexed on a thread. The switch interval is raised to 50 ms for the test: behind a thread that holds
the GIL the loop can wake at most once per interval (20 times a second), however loaded the
machine; a segmenter that lets the GIL go while it cuts lets it wake far more often, though how
often varies with who wins each hand-over of the GIL (57 to 700 times a second here; jieba itself,
16 to 18): so the batch takes about half a second, and the bar, 30 a second, is half again the rate
a cut that holds the GIL allows.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from runtime.store.text import index_text, warm_up

ROOT = Path(__file__).resolve().parents[2]
SWITCH = 0.05


def chat(n: int) -> list[str]:
    lines = [
        json.loads(line)["text"]
        for line in (ROOT / "tests/replay/fixtures/groups.jsonl").read_text("utf-8").splitlines()
    ]
    return [f"{lines[i % len(lines)]}，{lines[(i * 7) % len(lines)]}（第{i}条）" for i in range(n)]


@pytest.mark.asyncio
async def test_the_loop_keeps_running_while_messages_are_indexed() -> None:
    await asyncio.to_thread(warm_up)
    texts = chat(20_000)
    wakes = 0
    interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH)
    try:
        begun = time.perf_counter()
        indexing = asyncio.ensure_future(asyncio.to_thread(lambda: [index_text(t) for t in texts]))
        while not indexing.done():
            await asyncio.sleep(0.001)
            wakes += 1
        elapsed = time.perf_counter() - begun
        indexed = await indexing
    finally:
        sys.setswitchinterval(interval)
    assert len(indexed) == len(texts)
    rate = wakes / elapsed
    assert rate > 1.5 / SWITCH, f"the loop woke {wakes} times in {elapsed:.2f} s ({rate:.0f}/s)"
