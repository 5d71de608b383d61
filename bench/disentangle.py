"""Thread disentanglement: the bot's ThreadTracker, with the bot's defaults, over real chat logs.

Corpus: the Ubuntu IRC conversation-disentanglement data of

    Jonathan K. Kummerfeld, Sai R. Gouravajhala, Joseph J. Peper, Vignesh Athreya, Chulaka
    Gunasekara, Jatin Ganhotra, Siva Sankalp Patel, Lazaros Polymenakos, and Walter S. Lasecki.
    2019. A Large-Scale Corpus for Conversation Disentanglement. In Proceedings of ACL 2019,
    pages 3846-3856. doi:10.18653/v1/P19-1374. https://jkk.name/irc-disentanglement

licensed CC BY 4.0 (used unchanged). The dev split lives in ``../shared/data/disentangle/dev``.

Input (``--data DIR``, searched recursively): ``NAME.ascii.txt`` one line a message, ``[HH:MM] <nick>
text`` (``[HH:MM]  * nick text`` for actions) or ``=== ...`` system lines; ``NAME.annotation.txt``
lines ``EARLIER LATER -`` (equal numbers start a conversation). Ids below 1000 are context: fed to the
tracker, never scored. Gold conversations are the connected components of the links, cut to ids
>= 1000.

How the log is fed: every line in order, one chat per file, minutes -> seconds, with 24 h (or 12 h
for logs on a 12-hour clock) added when the clock wraps. IRC addressing (``nick: text``, ``nick,
text`` where nick has spoken before) becomes an @-mention, as QQ's @ segment would be; a nick change
keeps the same sender id, as a QQ user id would. System lines are not chat messages: each is its own
conversation.

Printed, pooled over all files: 1 - scaled VI (100 * (1 - VI / log2 N)), one-to-one overlap
(maximum-weight one-to-one matching of clusters), exact-match precision / recall / F over clusters
of 2+ messages, and the tracker's throughput (median of several runs).

    .venv/bin/python bench/disentangle.py [--data DIR] [--out FILE] [--config FILE]
                                          [--mentions anywhere|prefix] [--baseline previous]
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.config import GreyWindConfig, load_config, parse_config
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings
from runtime.kernel.threads import ThreadSettings, ThreadTracker

DATA_ROOT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "disentangle"
# The data folder holds the dev split, the train split and new-domains side by side: the dev split is
# what the figures are tuned and reported on unless --data names another folder.
DEFAULT_DATA = DATA_ROOT / "dev"
FIRST_SCORED = 1000

_MESSAGE = re.compile(r"^\[(\d\d):(\d\d)\] <([^>]+)> ?(.*)$")
_ACTION = re.compile(r"^\[(\d\d):(\d\d)\]\s+\* (\S+) ?(.*)$")
_ADDRESS = re.compile(r"^\s*@?([^\s:,]+)\s*[:,]")
# A nick-like token; known speakers' nicks anywhere in a line count as mentions (IRC clients
# highlight them, as QQ shows an @ segment wherever it sits in a message). Short nicks are left out
# because they collide with ordinary words.
_MIN_NICK_ANYWHERE = 3
_NICKISH = re.compile(r"[A-Za-z0-9_\-\[\]\\^{}|`]+")
_RENAME = re.compile(r"^=== (\S+) is now known as (\S+)")

Clusters = dict[str, list[int]]  # cluster key -> message ids


# -- the log -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Line:
    index: int
    message: ChatMessage | None  # None for a system line


def _wrap(backwards: int) -> int:
    """Minutes to add when the clock goes back by ``backwards`` minutes.

    Midnight on a 24-hour clock, noon or midnight on a 12-hour clock (some logs use one): the
    smallest of 0 (a jitter of a few minutes), 12 h or 24 h that keeps time moving forward.
    """
    if backwards <= 5:
        return 0
    return 12 * 60 if backwards <= 12 * 60 else 24 * 60


def parse_log(stem: str, lines: Sequence[str], *, anywhere: bool = True) -> list[Line]:
    """The lines of one log as chat messages (system lines as ``None``), in order.

    Mentions: ``nick: text`` / ``nick, text`` for a nick that has spoken before; with ``anywhere``,
    also such a nick (3+ characters) anywhere in the text.
    """
    out: list[Line] = []
    aliases: dict[str, str] = {}  # current nick (lower) -> stable sender id
    speakers: set[str] = set()
    offset = 0  # minutes added for clock wraps so far
    last_minute = -1
    now = 0.0
    for index, raw in enumerate(lines):
        match = _MESSAGE.match(raw) or _ACTION.match(raw)
        if match is None:
            renamed = _RENAME.match(raw)
            if renamed:
                old, new = renamed.group(1).lower(), renamed.group(2).lower()
                aliases[new] = aliases.get(old, old)
                if old in speakers:
                    speakers.add(new)
            out.append(Line(index, None))
            continue
        hh, mm, nick, text = match.groups()
        minute = offset + int(hh) * 60 + int(mm)
        if minute < last_minute:
            offset += _wrap(last_minute - minute)
            minute = max(last_minute, offset + int(hh) * 60 + int(mm))
        last_minute = minute
        now = float(minute * 60)
        nick_key = nick.lower()
        sender = aliases.setdefault(nick_key, nick_key)
        mentions: list[str] = []
        addressed = _ADDRESS.match(text)
        if addressed:
            target = addressed.group(1).lower()
            if target in speakers and target != nick_key:
                mentions.append(aliases.get(target, target))
        if anywhere:
            for token in _NICKISH.findall(text):
                target = token.lower()
                if len(target) >= _MIN_NICK_ANYWHERE and target in speakers and target != nick_key:
                    who = aliases.get(target, target)
                    if who not in mentions:
                        mentions.append(who)
        speakers.add(nick_key)
        message = ChatMessage(
            message_id=str(index),
            chat_kind=ChatKind.GROUP,
            chat_ident=stem,
            sender_id=sender,
            sender_name=nick,
            time=now,
            text=text,
            mentions=tuple(mentions),
        )
        out.append(Line(index, message))
    return out


def read_gold(annotation: Iterable[str]) -> Clusters:
    """Gold conversations: connected components of the links, cut to scored ids."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for row in annotation:
        parts = row.split()
        if len(parts) < 2:
            continue
        a, b = int(parts[0]), int(parts[1])
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    clusters: dict[str, list[int]] = defaultdict(list)
    for node in sorted(parent):
        if node >= FIRST_SCORED:
            clusters[f"g{find(node)}"].append(node)
    return dict(clusters)


# -- predictions ---------------------------------------------------------------------------------


def predict_tracker(log: Sequence[Line], settings: ThreadSettings) -> tuple[dict[int, str], float]:
    """Thread of every line (system lines alone) and the seconds spent inside the tracker."""
    tracker = ThreadTracker(settings)
    assign = tracker.assign
    labels: dict[int, str] = {}
    started = time.perf_counter()
    for line in log:
        if line.message is not None:
            labels[line.index] = assign(line.message).thread_id
    elapsed = time.perf_counter() - started
    for line in log:
        if line.message is None:
            labels[line.index] = f"sys-{line.index}"
    return labels, elapsed


def predict_previous(log: Sequence[Line]) -> dict[int, str]:
    """The check baseline: every chat message linked to the previous chat message."""
    labels: dict[int, str] = {}
    for line in log:
        labels[line.index] = "chain" if line.message is not None else f"sys-{line.index}"
    return labels


def to_clusters(labels: Mapping[int, str]) -> Clusters:
    clusters: dict[str, list[int]] = defaultdict(list)
    for index in sorted(labels):
        if index >= FIRST_SCORED:
            clusters[labels[index]].append(index)
    return dict(clusters)


# -- scoring -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scores:
    messages: int
    one_minus_vi: float
    one_to_one: float
    precision: float
    recall: float
    f1: float


def _entropy(counts: Iterable[int], n: int) -> float:
    return -sum(c / n * math.log2(c / n) for c in counts if c)


def hungarian_max(weights: Sequence[Sequence[float]]) -> float:
    """The largest total weight of a one-to-one matching of rows to columns (rows <= columns)."""
    n = len(weights)
    if n == 0:
        return 0.0
    m = len(weights[0])
    if n > m:
        return hungarian_max([list(col) for col in zip(*weights, strict=True)])
    big = max(max(row) for row in weights)
    cost = [[big - w for w in row] for row in weights]
    inf = float("inf")
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    p = [0] * (m + 1)  # p[j]: row matched to column j (1-based, 0 = none)
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = p[j0]
            row = cost[i0 - 1]
            ui0 = u[i0]
            delta = inf
            j1 = 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = row[j - 1] - ui0 - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    return sum(weights[p[j] - 1][j - 1] for j in range(1, m + 1) if p[j])


def _one_to_one(gold: Clusters, pred: Clusters) -> int:
    """Matched messages under the best one-to-one matching, solved per connected block."""
    where_pred = {msg: key for key, msgs in pred.items() for msg in msgs}
    overlap: dict[str, Counter[str]] = {g: Counter(where_pred[m] for m in msgs) for g, msgs in gold.items()}
    pred_to_gold: dict[str, set[str]] = defaultdict(set)
    for g, row in overlap.items():
        for p in row:
            pred_to_gold[p].add(g)
    seen: set[str] = set()
    total = 0
    for start in gold:
        if start in seen:
            continue
        block_gold: list[str] = []
        block_pred: set[str] = set()
        stack = [start]
        seen.add(start)
        while stack:
            g = stack.pop()
            block_gold.append(g)
            for p in overlap[g]:
                if p not in block_pred:
                    block_pred.add(p)
                    for g2 in pred_to_gold[p]:
                        if g2 not in seen:
                            seen.add(g2)
                            stack.append(g2)
        cols = sorted(block_pred)
        matrix = [[float(overlap[g].get(p, 0)) for p in cols] for g in block_gold]
        total += round(hungarian_max(matrix))
    return total


def score(pairs: Sequence[tuple[Clusters, Clusters]]) -> Scores:
    """Pooled scores over (gold, predicted) cluster pairs, one pair per file."""
    n = 0
    joint: Counter[tuple[int, str, str]] = Counter()
    gold_sizes: list[int] = []
    pred_sizes: list[int] = []
    matched = 0
    exact = 0
    gold_multi = 0
    pred_multi = 0
    for file_no, (gold, pred) in enumerate(pairs):
        if sorted(m for ms in gold.values() for m in ms) != sorted(m for ms in pred.values() for m in ms):
            raise ValueError(f"file {file_no}: gold and predicted clusters cover different messages")
        where_pred = {m: key for key, ms in pred.items() for m in ms}
        for g, msgs in gold.items():
            for m in msgs:
                joint[(file_no, g, where_pred[m])] += 1
        n += sum(len(ms) for ms in gold.values())
        gold_sizes += [len(ms) for ms in gold.values()]
        pred_sizes += [len(ms) for ms in pred.values()]
        matched += _one_to_one(gold, pred)
        gold_sets = {frozenset(ms) for ms in gold.values() if len(ms) > 1}
        pred_sets = {frozenset(ms) for ms in pred.values() if len(ms) > 1}
        exact += len(gold_sets & pred_sets)
        gold_multi += len(gold_sets)
        pred_multi += len(pred_sets)
    if n == 0:
        raise ValueError("no scored messages")
    h_joint = _entropy(joint.values(), n)
    vi = 2 * h_joint - _entropy(gold_sizes, n) - _entropy(pred_sizes, n)
    precision = exact / pred_multi if pred_multi else 0.0
    recall = exact / gold_multi if gold_multi else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Scores(
        messages=n,
        one_minus_vi=100.0 * (1.0 - vi / math.log2(n)) if n > 1 else 100.0,
        one_to_one=100.0 * matched / n,
        precision=100.0 * precision,
        recall=100.0 * recall,
        f1=100.0 * f1,
    )


# -- the run -------------------------------------------------------------------------------------


def load(data: Path, *, anywhere: bool = True) -> list[tuple[str, list[Line], Clusters]]:
    files = sorted(data.rglob("*.ascii.txt"))
    if not files:
        raise SystemExit(f"no *.ascii.txt files under {data}")
    out = []
    for ascii_path in files:
        stem = ascii_path.name[: -len(".ascii.txt")]
        annotation = ascii_path.with_name(f"{stem}.annotation.txt")
        if not annotation.exists():
            raise SystemExit(f"{ascii_path}: no {annotation.name} beside it")
        lines = ascii_path.read_text(encoding="utf-8", errors="replace").splitlines()
        gold = read_gold(annotation.read_text(encoding="utf-8").splitlines())
        out.append((stem, parse_log(stem, lines, anywhere=anywhere), gold))
    return out


def bot_thread_settings(config: GreyWindConfig | None = None) -> ThreadSettings:
    """The tracker settings the bot builds from its config (an empty config: the defaults)."""
    return KernelSettings.from_config(config if config is not None else parse_config({})).threads


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory of *.ascii.txt files")
    parser.add_argument(
        "--config", type=Path, help="a GreyWind TOML config to take [threads] from (default: the defaults)"
    )
    parser.add_argument("--out", type=Path, help="write clusters here, one conversation a line")
    parser.add_argument("--baseline", choices=["previous"], help="score a baseline instead of the tracker")
    parser.add_argument(
        "--mentions",
        choices=["anywhere", "prefix"],
        default="anywhere",
        help="which nicks become @-mentions: anywhere in a line (default) or only `nick:` at its start",
    )
    parser.add_argument("--runs", type=int, default=5, help="timed runs for the throughput median")
    args = parser.parse_args(argv)

    corpus = load(args.data, anywhere=args.mentions == "anywhere")
    config = load_config(args.config) if args.config else parse_config({})
    settings = bot_thread_settings(config)
    pairs: list[tuple[Clusters, Clusters]] = []
    written: list[str] = []
    messages = sum(1 for _, log, _ in corpus for line in log if line.message is not None)
    for stem, log, gold in corpus:
        if args.baseline == "previous":
            labels = predict_previous(log)
        else:
            labels, _ = predict_tracker(log, settings)
        pred = to_clusters(labels)
        pairs.append((gold, pred))
        written += [f"{stem}:" + " ".join(map(str, ids)) for ids in pred.values()]
    result = score(pairs)
    source = args.config or "default [threads] config"
    name = f"baseline {args.baseline}" if args.baseline else f"ThreadTracker ({source})"
    print(
        f"{name} on {args.data}: {len(corpus)} files, {messages} chat messages fed, "
        f"{result.messages} scored, mentions: {args.mentions}"
    )
    print(f"  1 - scaled VI   {result.one_minus_vi:6.1f}")
    print(f"  one-to-one      {result.one_to_one:6.1f}")
    print(f"  exact match     P {result.precision:5.1f}  R {result.recall:5.1f}  F {result.f1:5.1f}")
    if not args.baseline:
        rates = []
        for _ in range(max(1, args.runs)):
            spent = sum(predict_tracker(log, settings)[1] for _, log, _ in corpus)
            rates.append(messages / spent)
        median = statistics.median(rates)
        per_message = 1e6 / median
        runs = len(rates)
        print(
            f"  throughput      {median:,.0f} msg/s ({per_message:.1f} µs/msg, median of {runs} runs;"
            f" best {max(rates):,.0f} msg/s)"
        )
    if args.out:
        args.out.write_text("\n".join(written) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
