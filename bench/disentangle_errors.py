"""Where the ThreadTracker's disentanglement goes wrong, per split: what ``bench/disentangle.py``'s
scores do not say.

For each row of a split (the same rows and data as ``bench/disentangle.py``), three breakdowns:

- **conversations** of 2+ messages, by gold size: found exactly; *merged* (all of it in one
  predicted thread that also holds other messages); *split* (spread over threads that hold nothing
  else); or both. Beside them, the exact-match precision of the predicted threads of that size.
- **starts**: the messages that begin a gold conversation, and what the tracker did with each:
  began a thread, or joined one (by the reason it gave: speaker, mention, terms, ...); and the
  threads it began in the middle of a gold conversation. A merged conversation is mostly a start
  that joined: exact F rests on these decisions.
- **Loc-3's disagreements**: of the pairs at most 3 apart, those gold keeps together and the
  tracker parts (split) and those gold parts and the tracker keeps together (merged), each by the
  reason the later message's thread was chosen.

    .venv/bin/python bench/disentangle_errors.py [--split dev|train|train-held-out|new-domains|all]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.disentangle import (
    Clusters,
    Line,
    bot_thread_settings,
    load_files,
    local_pairs,
    split_files,
    system_label,
    to_clusters,
)
from runtime.kernel.threads import ThreadSettings, ThreadTracker

SIZES = ((2, 2, "2"), (3, 4, "3-4"), (5, 9, "5-9"), (10, 19, "10-19"), (20, 10**9, "20+"))
KINDS = ("exact", "merged", "split", "both")
SYSTEM = "system"  # the reason given for a system line: its own conversation, never the tracker's


def size_label(size: int) -> str:
    return next(label for low, high, label in SIZES if low <= size <= high)


def conversation_errors(gold: Clusters, pred: Clusters) -> Counter[tuple[str, str]]:
    """``(size label, kind)`` per gold conversation of 2+ messages, and ``(size label, "predicted")``
    / ``(size label, "predicted exact")`` per predicted thread of 2+ messages."""
    where = {m: key for key, ms in pred.items() for m in ms}
    exact = {frozenset(ms) for ms in gold.values() if len(ms) > 1}
    out: Counter[tuple[str, str]] = Counter()
    for messages in gold.values():
        if len(messages) < 2:
            continue
        label = size_label(len(messages))
        mine = set(messages)
        threads = {where[m] for m in messages}
        others = any(m not in mine for key in threads for m in pred[key])
        if len(threads) == 1 and not others:
            kind = "exact"
        elif len(threads) == 1:
            kind = "merged"
        else:
            kind = "both" if others else "split"
        out[(label, kind)] += 1
    for messages in pred.values():
        if len(messages) > 1:
            label = size_label(len(messages))
            out[(label, "predicted")] += 1
            out[(label, "predicted exact")] += frozenset(messages) in exact
    return out


def decisions(log: Sequence[Line], settings: ThreadSettings) -> tuple[dict[int, str], dict[int, str]]:
    """The tracker over ``log``: each line's thread, and why it went there (``new`` for a thread it
    began; a system line is its own conversation)."""
    tracker = ThreadTracker(settings)
    labels: dict[int, str] = {}
    reasons: dict[int, str] = {}
    for line in log:
        if line.message is None:
            labels[line.index], reasons[line.index] = system_label(line.index), SYSTEM
            continue
        assignment = tracker.assign(line.message)
        labels[line.index] = assignment.thread_id
        reasons[line.index] = "new" if assignment.created else assignment.reason
    return labels, reasons


def start_errors(gold: Clusters, reasons: dict[int, str]) -> Counter[tuple[str, str]]:
    """``("start", reason)`` for each message that begins a gold conversation of 2+ messages, and
    ``("inside", "new")`` for each later message of one that began a thread."""
    out: Counter[tuple[str, str]] = Counter()
    for messages in gold.values():
        if len(messages) < 2:
            continue
        first, *rest = sorted(messages)
        out[("start", reasons[first])] += 1
        out[("inside", "new")] += sum(reasons[m] == "new" for m in rest)
    return out


def local_errors(
    gold: Clusters, pred: Clusters, reasons: dict[int, str], k: int = 3
) -> Counter[tuple[str, str]]:
    """Loc-k's pairs (as in ``bench/disentangle.local_agreement``): ``("pairs", "")`` each, and
    ``("split" | "merged", reason of the later message)`` for each pair gold and the tracker disagree
    on."""
    out: Counter[tuple[str, str]] = Counter()
    for later, same_gold, same_pred in local_pairs(gold, pred, k):
        out[("pairs", "")] += 1
        if same_gold != same_pred:
            out[("split" if same_gold else "merged", reasons[later])] += 1
    return out


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def _by_reason(counts: Counter[tuple[str, str]], side: str, whole: int) -> str:
    items = sorted(((n, reason) for (s, reason), n in counts.items() if s == side), reverse=True)
    return ", ".join(f"{reason} {_share(n, whole).strip()}" for n, reason in items) or "none"


def report(name: str, corpus: Sequence[tuple[str, list[Line], Clusters]], settings: ThreadSettings) -> None:
    conversations: Counter[tuple[str, str]] = Counter()
    starts: Counter[tuple[str, str]] = Counter()
    local: Counter[tuple[str, str]] = Counter()
    for _stem, log, gold in corpus:
        labels, reasons = decisions(log, settings)
        pred = to_clusters(labels)
        conversations += conversation_errors(gold, pred)
        starts += start_errors(gold, reasons)
        local += local_errors(gold, pred, reasons)
    print(f"## {name}")
    print("   gold conversations      n   exact  merged   split    both   predicted threads  exact")
    for _, _, label in SIZES:
        n = sum(conversations[(label, kind)] for kind in KINDS)
        shares = "  ".join(_share(conversations[(label, kind)], n) for kind in KINDS)
        predicted = conversations[(label, "predicted")]
        right = _share(conversations[(label, "predicted exact")], predicted)
        print(f"   {label:>6} messages  {n:7d}  {shares}   {predicted:17d} {right}")
    begun = sum(n for (side, _), n in starts.items() if side == "start")
    joined = Counter({key: n for key, n in starts.items() if key[1] != "new"})
    print(
        f"   starts of gold conversations: {begun};"
        f" began a thread {_share(starts[('start', 'new')], begun).strip()},"
        f" joined one: {_by_reason(joined, 'start', begun)}"
    )
    print(f"   threads begun inside a gold conversation: {starts[('inside', 'new')]}")
    pairs = local[("pairs", "")]
    split = sum(n for (side, _), n in local.items() if side == "split")
    merged = sum(n for (side, _), n in local.items() if side == "merged")
    print(f"   Loc-3 pairs {pairs}: agree {_share(pairs - split - merged, pairs).strip()}")
    print(f"     split  {_share(split, pairs)}: {_by_reason(local, 'split', pairs)}")
    print(f"     merged {_share(merged, pairs)}: {_by_reason(local, 'merged', pairs)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--split", choices=["dev", "train", "train-held-out", "new-domains", "all"], default="dev"
    )
    args = parser.parse_args(argv)
    settings = bot_thread_settings()
    for name, paths in split_files(args.split):
        report(name, load_files(paths), settings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
