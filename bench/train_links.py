"""Fit the ThreadTracker's link scorer on the Ubuntu IRC train split; write runtime/kernel/link_weights.json.

The scorer (``runtime/kernel/_links.py``) gives every message a choice among its candidate threads
and "new", each option a handful of table features, its score the sum of their weights. Fitting
replays every train file through a real ThreadTracker with the annotated conversations as the
threads (teacher forcing: each annotated message goes, via ``restore``, into its gold conversation's
thread; unannotated context lines are assigned by the tracker's signals scorer), asking the tracker
at every scored message for its options' features (``ThreadTracker.link_features``). The answer is
the option holding the message's gold conversation, or "new" when the message starts one or its
conversation is no longer a candidate. The model is a softmax over the options (multinomial
logistic regression with an L2 penalty), fitted by full-batch Adam in numpy. Deterministic: the
same data and code give the same file.

The files of ``bench/disentangle.py``'s train-held-out set are never read here: they are reported
there, with the dev split and new-domains, which are not read here either.

    .venv/bin/python bench/train_links.py [--steps 800] [--l2 1e-5] [--out FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.disentangle import FIRST_SCORED, Line, bot_thread_settings, parse_log, train_split
from runtime.kernel._links import FEATURES, TABLES
from runtime.kernel.threads import RestoredMessage, ThreadSettings, ThreadTracker

OUT = Path(__file__).resolve().parents[1] / "runtime" / "kernel" / "link_weights.json"

Example = tuple[list[tuple[int, ...]], int]  # every option's features, the answer's index


def read_links(path: Path) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Each annotated message's conversation (its component's smallest id) and its earlier links."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    earlier: dict[int, list[int]] = defaultdict(list)
    for row in path.read_text(encoding="utf-8").splitlines():
        parts = row.split()
        if len(parts) < 2:
            continue
        a, b = sorted((int(parts[0]), int(parts[1])))
        if a != b:
            earlier[b].append(a)
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {node: find(node) for node in parent}, earlier


def file_examples(
    log: Sequence[Line],
    conversation: dict[int, int],
    earlier: dict[int, list[int]],
    settings: ThreadSettings,
) -> list[Example]:
    tracker = ThreadTracker(settings)
    out: list[Example] = []
    for line in log:
        message = line.message
        if message is None:
            continue
        root = conversation.get(line.index)
        if root is None:
            tracker.assign(message)
            continue
        thread_id = f"gold-{root}"
        if line.index >= FIRST_SCORED:
            ids, features = tracker.link_features(message)
            answer = len(ids)  # "new"
            if earlier.get(line.index) and thread_id in ids:
                answer = ids.index(thread_id)
            out.append((features, answer))
        tracker.restore([RestoredMessage(message, thread_id)], message.time)
    return out


def examples(files: Sequence[Path], settings: ThreadSettings) -> list[Example]:
    out: list[Example] = []
    for path in files:
        stem = path.name[: -len(".ascii.txt")]
        log = parse_log(stem, path.read_text(encoding="utf-8", errors="replace").splitlines())
        conversation, earlier = read_links(path.with_name(f"{stem}.annotation.txt"))
        out += file_examples(log, conversation, earlier, settings)
    return out


def fit(
    data: Sequence[Example], steps: int, l2: float, rate: float = 0.05, *, quiet: bool = False
) -> np.ndarray:
    """Softmax regression over each example's options; returns the FEATURES weights."""
    # Every option padded to the widest with a feature whose weight is held at 0 ("new" has fewer).
    width = max(len(option) for features, _ in data for option in features)
    rows: list[tuple[int, ...]] = []
    owner: list[int] = []
    answer: list[float] = []
    for number, (features, target) in enumerate(data):
        for index, option in enumerate(features):
            rows.append(option + (FEATURES,) * (width - len(option)))
            owner.append(number)
            answer.append(1.0 if index == target else 0.0)
    f = np.array(rows, dtype=np.int64)
    seg = np.array(owner, dtype=np.int64)
    y = np.array(answer)
    starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    w = np.zeros(FEATURES + 1)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for step in range(1, steps + 1):
        scores = w[f].sum(axis=1)
        top = np.maximum.reduceat(scores, starts)[seg]
        e = np.exp(scores - top)
        z = np.add.reduceat(e, starts)[seg]
        p = e / z
        grad = np.bincount(f.ravel(), weights=np.repeat(p - y, width), minlength=FEATURES + 1)
        grad = grad / len(data) + l2 * w
        grad[FEATURES] = 0.0
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= rate * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
        if not quiet and (step % 100 == 0 or step == steps):
            loss = -np.sum(np.log(p[y > 0] + 1e-12)) / len(data)
            right = np.mean(np.maximum.reduceat(scores, starts) == np.add.reduceat(scores * y, starts))
            print(f"  step {step}: loss {loss:.4f}, answer ranked first {100 * right:.1f}%", flush=True)
    return w[:FEATURES]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--l2", type=float, default=1e-5)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    # The context lines go where the signals scorer puts them (the bot's default scorer).
    settings = dataclasses.replace(bot_thread_settings(), scorer="signals")
    files, _held_out = train_split()
    started = time.perf_counter()
    data = examples(files, settings)
    news = sum(1 for features, target in data if target == len(features) - 1)
    print(
        f"{len(data)} messages from {len(files)} train files ({news} new-conversation answers),"
        f" {time.perf_counter() - started:.1f} s"
    )
    weights = tuple(round(float(x), 4) for x in fit(data, args.steps, args.l2))
    layout = [[name, rows, cols] for name, rows, cols, _ in TABLES]
    payload = {"layout": layout, "weights": weights}
    args.out.write_text(json.dumps(payload, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
