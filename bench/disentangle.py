"""Thread disentanglement: the bot's ThreadTracker, with the bot's defaults, over real chat logs.

Corpus: the Ubuntu IRC conversation-disentanglement data of

    Jonathan K. Kummerfeld, Sai R. Gouravajhala, Joseph J. Peper, Vignesh Athreya, Chulaka
    Gunasekara, Jatin Ganhotra, Siva Sankalp Patel, Lazaros Polymenakos, and Walter S. Lasecki.
    2019. A Large-Scale Corpus for Conversation Disentanglement. In Proceedings of ACL 2019,
    pages 3846-3856. doi:10.18653/v1/P19-1374. https://jkk.name/irc-disentanglement

licensed CC BY 4.0. The splits live in ``../shared/data/disentangle/`` (``dev``, ``train``, and the
``new-domains`` channels of Gouravajhala et al., ALTA 2023; see its LICENSE-NOTE.md).

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

Splits (``--split``, default ``dev``): ``dev``; ``train``, reported as the files the link scorer is
fitted on and the fixed ``train-held-out`` files it never sees (every tenth, from the sixth); and
``new-domains``, a row per channel (mediawiki, rust, stripe, ubuntu-meeting) and one for all four;
``all`` is the three. Each row is pooled over its files, with the 'previous' baseline (every message
linked to the one before it) under it: 1 - scaled VI (100 * (1 - VI / log2 N)), one-to-one overlap
(maximum-weight one-to-one matching of clusters), exact-match precision / recall / F over clusters
of 2+ messages, Loc-3 (agreement on same / different conversation for messages at most 3 apart),
Shen F (each gold conversation's best F against a predicted one, weighted by its size), and the
largest predicted conversation of any one file against gold's largest; then the tracker's
throughput (median of several runs) over every file read.

    .venv/bin/python bench/disentangle.py [--split dev|train|train-held-out|new-domains|all]
                                          [--data DIR] [--out FILE] [--config FILE]
                                          [--scorer signals|learned]
                                          [--mentions anywhere|prefix] [--baseline previous]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
# The train split's files never fitted on (reported as train-held-out): every tenth from the sixth.
TRAIN_HELD_OUT_START = 5
TRAIN_HELD_OUT_EVERY = 10

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


def system_label(index: int) -> str:
    """The conversation of system line ``index``: its own."""
    return f"sys-{index}"


def predict_tracker(
    log: Sequence[Line], settings: ThreadSettings, link_weights: tuple[float, ...] | None = None
) -> tuple[dict[int, str], float]:
    """Thread of every line (system lines alone) and the seconds spent inside the tracker (with the
    shipped link weights unless ``link_weights`` are given)."""
    tracker = ThreadTracker(settings, link_weights=link_weights)
    assign = tracker.assign
    labels: dict[int, str] = {}
    started = time.perf_counter()
    for line in log:
        if line.message is not None:
            labels[line.index] = assign(line.message).thread_id
    elapsed = time.perf_counter() - started
    for line in log:
        if line.message is None:
            labels[line.index] = system_label(line.index)
    return labels, elapsed


def predict_previous(log: Sequence[Line]) -> dict[int, str]:
    """The check baseline: every chat message linked to the previous chat message."""
    labels: dict[int, str] = {}
    for line in log:
        labels[line.index] = "chain" if line.message is not None else system_label(line.index)
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
    loc3: float = 100.0  # Loc-3: agreement on same / different conversation, pairs at most 3 apart
    shen_f: float = 100.0  # Shen et al. (2006): each gold cluster's best F, weighted by its size
    largest: int = 0  # the largest predicted conversation of any one file (scored messages)
    gold_largest: int = 0  # the largest gold conversation of any one file


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


def local_agreement(gold: Clusters, pred: Clusters, k: int = 3) -> tuple[int, int]:
    """Loc-k's counts for one file: (agreeing pairs, pairs) over the messages at most ``k`` apart.

    As in Kummerfeld et al. (2019), after Elsner and Charniak: for every scored message and each of
    the ``k`` messages before it, whether gold and prediction agree on same or different
    conversation.
    """
    agree = total = 0
    for _later, same_gold, same_pred in local_pairs(gold, pred, k):
        total += 1
        agree += same_gold == same_pred
    return agree, total


def local_pairs(gold: Clusters, pred: Clusters, k: int = 3) -> Iterator[tuple[int, bool, bool]]:
    """Loc-k's pairs: for every scored message and each of the ``k`` before it, the later message and
    whether gold, and the prediction, put the two in the same conversation."""
    where_gold = {m: key for key, ms in gold.items() for m in ms}
    where_pred = {m: key for key, ms in pred.items() for m in ms}
    order = sorted(where_gold)
    for i, later in enumerate(order):
        for earlier in order[max(0, i - k) : i]:
            yield later, where_gold[earlier] == where_gold[later], where_pred[earlier] == where_pred[later]


def shen_f_sum(gold: Clusters, pred: Clusters) -> float:
    """Shen et al. (2006)'s F for one file, unnormalised: the sum over gold clusters of
    ``size * max over predicted clusters of F(gold, predicted)`` (divide by the messages)."""
    where_pred = {m: key for key, ms in pred.items() for m in ms}
    pred_size = {key: len(ms) for key, ms in pred.items()}
    total = 0.0
    for msgs in gold.values():
        best = 0.0
        for key, both in Counter(where_pred[m] for m in msgs).items():
            precision, recall = both / pred_size[key], both / len(msgs)
            best = max(best, 2 * precision * recall / (precision + recall))
        total += len(msgs) * best
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
    loc_agree = loc_total = 0
    shen = 0.0
    largest = gold_largest = 0
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
        agree, total = local_agreement(gold, pred)
        loc_agree += agree
        loc_total += total
        shen += shen_f_sum(gold, pred)
        largest = max(largest, max(map(len, pred.values()), default=0))
        gold_largest = max(gold_largest, max(map(len, gold.values()), default=0))
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
        loc3=100.0 * loc_agree / loc_total if loc_total else 100.0,
        shen_f=100.0 * shen / n,
        largest=largest,
        gold_largest=gold_largest,
    )


# -- the run -------------------------------------------------------------------------------------


def load(data: Path, *, anywhere: bool = True) -> list[tuple[str, list[Line], Clusters]]:
    files = sorted(data.rglob("*.ascii.txt"))
    if not files:
        raise SystemExit(f"no *.ascii.txt files under {data}")
    return load_files(files, anywhere=anywhere)


def split_files(split: str) -> list[tuple[str, list[Path]]]:
    """The rows of a split: (row name, its ``*.ascii.txt`` files), in a fixed order.

    ``train`` is the split the link scorer is fitted on, less :data:`TRAIN_HELD_OUT`'s files, which
    are never fitted on and are reported as ``train-held-out``. ``new-domains`` has a row per channel
    (the file name's part before the first dot) and one for all four.
    """
    if split == "dev":
        return [("dev", sorted((DATA_ROOT / "dev").rglob("*.ascii.txt")))]
    if split == "train":
        fit, held_out = train_split()
        return [("train (fitted)", fit), ("train-held-out", held_out)]
    if split == "train-held-out":
        return [("train-held-out", train_split()[1])]
    if split == "new-domains":
        files = sorted((DATA_ROOT / "new-domains").glob("*.ascii.txt"))
        channels: dict[str, list[Path]] = defaultdict(list)
        for path in files:
            channels[path.name.split(".")[0]].append(path)
        return [
            *((f"new-domains/{name}", paths) for name, paths in sorted(channels.items())),
            ("new-domains", files),
        ]
    if split == "all":
        return [row for name in ("dev", "train", "new-domains") for row in split_files(name)]
    raise SystemExit(f"unknown split {split!r}")


def train_split() -> tuple[list[Path], list[Path]]:
    """The train split's files: (fitted on, held out). Every tenth file from the sixth is held out."""
    files = sorted((DATA_ROOT / "train").glob("*.ascii.txt"))
    held = set(files[TRAIN_HELD_OUT_START::TRAIN_HELD_OUT_EVERY])
    return [f for f in files if f not in held], [f for f in files if f in held]


def load_files(files: Sequence[Path], *, anywhere: bool = True) -> list[tuple[str, list[Line], Clusters]]:
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


HEADER = (
    f"{'':28} {'msgs':>6} {'1-VI':>6} {'1-1':>6} {'P':>6} {'R':>6} {'F':>6} {'Loc-3':>6} {'ShenF':>6}"
    f" {'largest (gold)':>15}"
)


def row(name: str, result: Scores) -> str:
    return (
        f"{name:28} {result.messages:6d} {result.one_minus_vi:6.1f} {result.one_to_one:6.1f}"
        f" {result.precision:6.1f} {result.recall:6.1f} {result.f1:6.1f} {result.loc3:6.1f}"
        f" {result.shen_f:6.1f} {result.largest:>7d} ({result.gold_largest:>4d})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--split",
        choices=["dev", "train", "train-held-out", "new-domains", "all"],
        default="dev",
        help="which data to score (default: dev); train also reports its held-out files",
    )
    parser.add_argument(
        "--data", type=Path, help="score this directory of *.ascii.txt files instead of a split"
    )
    parser.add_argument(
        "--config", type=Path, help="a GreyWind TOML config to take [threads] from (default: the defaults)"
    )
    parser.add_argument("--out", type=Path, help="write clusters here, one conversation a line")
    parser.add_argument(
        "--scorer", choices=["signals", "learned"], help="override [threads] scorer (default: the config's)"
    )
    parser.add_argument("--baseline", choices=["previous"], help="score only a baseline, not the tracker")
    parser.add_argument(
        "--mentions",
        choices=["anywhere", "prefix"],
        default="anywhere",
        help="which nicks become @-mentions: anywhere in a line (default) or only `nick:` at its start",
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs for the throughput median (0: none)")
    args = parser.parse_args(argv)

    if args.data is not None:
        files = sorted(args.data.rglob("*.ascii.txt"))
        if not files:
            raise SystemExit(f"no *.ascii.txt files under {args.data}")
        rows = [(str(args.data), files)]
    else:
        rows = split_files(args.split)
    config = load_config(args.config) if args.config else parse_config({})
    settings = bot_thread_settings(config)
    if args.scorer:
        settings = dataclasses.replace(settings, scorer=args.scorer)
    anywhere = args.mentions == "anywhere"
    source = f"{args.config or 'default [threads] config'}, scorer {settings.scorer}"
    name = f"baseline {args.baseline}" if args.baseline else f"ThreadTracker ({source})"
    print(f"{name}, mentions: {args.mentions}; 'previous' = every message linked to the one before it")
    print(HEADER)
    written: list[str] = []
    loaded: dict[Path, tuple[str, list[Line], Clusters]] = {}
    for row_name, paths in rows:
        missing = [p for p in paths if p not in loaded]
        loaded.update(zip(missing, load_files(missing, anywhere=anywhere), strict=True))
        corpus = [loaded[p] for p in paths]
        if not corpus:
            raise SystemExit(f"{row_name}: no files (is the data folder at {DATA_ROOT}?)")
        baseline = score([(gold, to_clusters(predict_previous(log))) for _, log, gold in corpus])
        if args.baseline != "previous":
            pairs = []
            for stem, log, gold in corpus:
                pred = to_clusters(predict_tracker(log, settings)[0])
                pairs.append((gold, pred))
                written += [f"{stem}:" + " ".join(map(str, ids)) for ids in pred.values()]
            print(row(row_name, score(pairs)))
        print(row("  previous", baseline))
    timed = [log for _, log, _ in loaded.values()]
    messages = sum(1 for log in timed for line in log if line.message is not None)
    if not args.baseline and args.runs > 0:
        rates = []
        for _ in range(args.runs):
            spent = sum(predict_tracker(log, settings)[1] for log in timed)
            rates.append(messages / spent)
        median = statistics.median(rates)
        print(
            f"throughput over {len(timed)} files, {messages} chat messages fed: {median:,.0f} msg/s"
            f" ({1e6 / median:.1f} µs/msg, median of {len(rates)} runs; best {max(rates):,.0f} msg/s)"
        )
    if args.out:
        args.out.write_text("\n".join(written) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
