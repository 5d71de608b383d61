"""The whole process against the platform's own cost: ``bot.py`` beside a bare NoneBot bot, one stream.

Four processes on loopback: this script (two OneBot v11 peers, ``tests/e2e/onebot_peer.py``), the real
``bot.py`` and ``bench/bare_bot.py`` (NoneBot2 + OneBot v11, one matcher answering @s at once), each
started by ``tests/e2e/bot_process.py``, and the scripted model server of ``bench/e2e.py`` (answers at
once; ``observe`` when the kernel joins a conversation on its own). Every frame of one stream goes to
both bots back to back (which first alternates), so both see the same messages at the same moments
under the same machine load:

``--groups`` groups, ``--rate`` messages per second in all (Poisson arrivals, each message in a group
drawn at random), ``--messages`` of them, one in ``--at-every`` an @ of the bot carrying a unique tag,
one in ``--mention-every`` naming the bot inside the text (which the kernel weighs, and may answer).
The bot runs the shipped configuration with the budgets of ``bench/e2e.py`` (forced replies unlimited,
the account's send rate at the most the config allows); the kernel joins conversations on its own as
it would (the model's ``observe`` answers end those episodes), and their count is printed.

Printed for each bot, and their ratio:

- **CPU per message**: user + system CPU (``/proc/<pid>/stat``) over the stream and until every @ was
  answered, divided by the messages posted;
- **@ -> first send** p50/p99: the peer posting the @ -> the peer receiving its ``send_group_msg``;
- for ``bot.py`` also **@ -> model request** (the model server receiving the request);
- **the longest event-loop stall** (the bots' own loop-lag monitors, read from ``/status`` and
  ``/lag`` in private) and the **longest full garbage collection**;
- **RSS** every tenth of the stream and at the end, and its growth per 1,000 messages over the
  first and the second half (what is left of it once the caps are full); the **CPU per message** in
  each tenth of the stream (a cost that grows with what is stored or held rises along it), and the
  same split into the event loop's thread and the others (the store's writer and readers, worker
  threads): which side a rise is on.

``--baseline DIR`` drives a third bot, the ``bot.py`` of another tree (``git archive <commit> | tar -x
-C DIR``), with its own model server: what a change bought, measured in one run. ``--soak`` is the
60,000-message run (``--messages 60000``). ``--profile FILE`` records ``bot.py`` with
py-spy (``--py-spy``, or ``py-spy`` on ``PATH``) over the stream, as collapsed stacks in ``FILE``.
``--repeat N`` runs the same stream N times (fresh processes each) and ends with each headline figure's
median and every run's value: a p99 over 120 @s is their second-slowest, and one run's tail says little.
``--stall-trace FILE`` has ``bot.py`` sample its loop's stack whenever the loop is held past 40 ms
(``runtime/traces/stalls.py``), one JSON line per stall in ``FILE``, and prints the longest
stalls with what ran during them (a ``--baseline`` bot's in ``FILE-baseline``, printed after).
``--trace-memory FILE`` has ``bot.py`` start ``tracemalloc`` ``--trace-after`` seconds into its life and
compare a snapshot with the first and the previous one every ``--trace-every`` seconds
(``runtime/traces/memory.py``), and prints each interval's growth and the places that grew most. Tracing
slows the bot several times over: give it a ``--rate`` it keeps up with (50 a second on a 2-core
machine), or the backlog's buffers are the growth.

    .venv/bin/python bench/side_by_side.py [--rate 200] [--messages 12000] [--groups 200] [--at-every 100]
                                            [--soak] [--profile FILE] [--stall-trace FILE] [--seed 7]
                                            [--trace-memory FILE [--trace-after 60] [--trace-every 60]]
                                            [--repeat 1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._measure import percentile, rss_mb  # noqa: E402
from bench.e2e import (  # noqa: E402
    ADMIN,
    CHATTER,
    CONFIG,
    FIRST_GROUP,
    SELF_ID,
    USERS,
    ModelProcess,
    bot_counts,
    cpu_seconds,
    group_frame,
)
from runtime.stages import ENV as STAGE_TRACE  # noqa: E402
from runtime.traces import memory as memory_trace  # noqa: E402
from runtime.traces.stalls import ENV as STALL_TRACE  # noqa: E402
from tests.e2e.bot_process import BotProcess  # noqa: E402
from tests.e2e.onebot_peer import OneBotPeer  # noqa: E402
from tests.support import onebot_events as ob  # noqa: E402

_TAG = re.compile(r"〈(b\d+)〉")
# The persona named inside a message, not opening it: the kernel weighs it, nothing forces an answer.
MENTIONS = ["要不问问灰风？", "听说灰风也玩这个游戏？", "你们说灰风会怎么看", "这个灰风肯定知道吧"]
_LAG = re.compile(r"启动以来 (\d+) ms）；完整垃圾回收 (\d+) 次，最长 (\d+) ms")
_BARE_LAG = re.compile(r"lag worst ([\d.]+) ms; full gc (\d+), longest ([\d.]+) ms")


@dataclass
class Target:
    name: str
    process: BotProcess
    model: ModelProcess | None = None  # a GreyWind bot's own model server
    peer: OneBotPeer | None = None
    posted: dict[str, float] = field(default_factory=dict)  # tag -> when the @ was posted to it
    message_ids: dict[str, str] = field(default_factory=dict)  # tag -> the @'s message id
    stages: Path | None = None  # where it writes its stage stamps (--breakdown)
    cpu_start: float = 0.0
    cpu: float = 0.0
    rss: list[float] = field(default_factory=list)
    cpu_marks: list[float] = field(default_factory=list)  # CPU seconds at the start and every tenth
    loop_cpu_marks: list[float] = field(default_factory=list)  # the same, the event loop's thread alone
    stall_ms: float = float("nan")
    gc_full: int = 0
    gc_longest_ms: float = float("nan")

    @property
    def pid(self) -> int:
        assert self.process.pid is not None
        return self.process.pid

    def first_sends(self) -> dict[str, float]:
        assert self.peer is not None
        sends: dict[str, float] = {}
        for call in self.peer.sends():
            if (m := _TAG.search(call.text)) is not None:
                sends.setdefault(m.group(1), call.at)
        return sends


# The stages an @ passes on its way to the model (runtime/stages.py), in order; "request" is the model
# server receiving it.
STAGES = (
    "guard.held", "guard.out", "edge.submit", "runtime.entry", "runtime.ingested", "loop.task",
    "loop.lock", "loop.slot", "driver.deliberate", "driver.context", "context.thread",
    "context.session", "context.parts", "context.turn", "context.prepared", "model.ask", "model.post",
    "request",
)  # fmt: skip


def stream(args: argparse.Namespace) -> list[tuple[float, str, str | None]]:
    """(seconds from the start, frame, tag or None) for every message, one schedule for both bots."""
    rng = random.Random(args.seed)
    at, out = 0.0, []
    for n in range(1, args.messages + 1):
        at += rng.expovariate(args.rate)
        group = FIRST_GROUP + rng.randrange(args.groups)
        user = rng.randrange(1, USERS)
        if n % args.at_every == 0:
            tag = f"b{n}"
            message = [ob.at(SELF_ID), ob.text(f" 〈{tag}〉帮我看看这个")]
        elif n % args.mention_every == 0:
            tag, message = None, [ob.text(("" if n % 4 else "说真的，") + rng.choice(MENTIONS))]
        else:
            tag, message = None, [ob.text(rng.choice(CHATTER))]
        out.append((at, group_frame(group, user, message), tag))
    return out


async def drive(args: argparse.Namespace, targets: list[Target]) -> float:
    """Post the stream to every target; returns how long posting took."""
    schedule = stream(args)
    ids = {tag: str(json.loads(frame)["message_id"]) for _, frame, tag in schedule if tag is not None}
    tenth = max(1, len(schedule) // 10)
    started = time.monotonic()
    for n, (at, frame, tag) in enumerate(schedule, 1):
        ahead = started + at - time.monotonic()
        if ahead > 0:
            await asyncio.sleep(ahead)
        order = targets if n % 2 else targets[::-1]
        for target in order:
            assert target.peer is not None
            if tag is not None:
                target.posted[tag] = time.monotonic()
                target.message_ids[tag] = ids[tag]
            await target.peer.post_raw(frame)
        if n % tenth == 0:
            for target in targets:
                target.rss.append(rss_mb(target.pid))
                mark_cpu(target)
    return time.monotonic() - started


def mark_cpu(target: Target) -> None:
    """Note the bot's CPU seconds so far, the whole process's and its event loop's thread's."""
    target.cpu_marks.append(cpu_seconds(target.pid))
    target.loop_cpu_marks.append(cpu_seconds(target.pid, target.pid))


async def wait_answered(targets: list[Target], within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(set(t.first_sends()) >= set(t.posted) for t in targets):
            return
        await asyncio.sleep(0.1)


async def read_stalls(target: Target) -> None:
    """The longest loop stall and full collection, as the bot itself measured them."""
    assert target.peer is not None
    if target.model is not None:  # a GreyWind bot: its /status full
        try:
            counts = await asyncio.wait_for(bot_counts(target.peer), 60)
        except TimeoutError:
            print(f"{target.name} did not answer /status full within 60 s")
            return
        if (m := _LAG.search(counts.text)) is not None:
            target.stall_ms, target.gc_full = float(m.group(1)), int(m.group(2))
            target.gc_longest_ms = float(m.group(3))
        return
    before = len(target.peer.calls)
    await target.peer.post_raw(
        json.dumps(ob.private_message(self_id=SELF_ID, user_id=ADMIN, message=[ob.text("/lag")]))
    )
    try:
        call = await target.peer.wait_for_call(
            predicate=lambda c: _BARE_LAG.search(c.text) is not None, after=before, within=60
        )
    except TimeoutError:
        print(f"{target.name} did not answer /lag within 60 s")
        return
    if (m := _BARE_LAG.search(call.text)) is not None:
        target.stall_ms, target.gc_full = float(m.group(1)), int(m.group(2))
        target.gc_longest_ms = float(m.group(3))


def stage_stamps(target: Target, requests: dict[str, float]) -> dict[str, dict[str, float]]:
    """tag -> stage -> when (the first stamp of each), from the posting to the model's request."""
    if target.stages is None or not target.stages.exists():
        return {}
    by_id: dict[str, dict[str, float]] = {}
    for line in target.stages.read_text(encoding="utf-8").splitlines():
        key, stage, at = line.split("\t")
        by_id.setdefault(key, {}).setdefault(stage, float(at))
    out: dict[str, dict[str, float]] = {}
    for tag, posted in target.posted.items():
        stamps = {"posted": posted, **by_id.get(target.message_ids.get(tag, ""), {})}
        if tag in requests:
            stamps["request"] = requests[tag]
        out[tag] = stamps
    return out


def _spread_line(stage: str, values: list[float]) -> str:
    return (
        f"    {stage:<18} n={len(values):<4} {percentile(values, 0.5):7.1f} "
        f"{percentile(values, 0.99):7.1f} {max(values):7.1f}"
    )


def breakdown(stamps: dict[str, dict[str, float]]) -> None:
    """Per stage, the time since the stage before it (ms): p50 and p99 over the @s; the context's parts
    (read side by side) each from their start to its own end; then the slowest @s one by one."""
    steps: dict[str, list[float]] = {}
    rows: list[tuple[float, str, list[tuple[str, float]]]] = []
    for tag, times in stamps.items():
        if "request" not in times:
            continue
        previous, row = times["posted"], []
        for stage in STAGES:
            if stage in times:
                row.append((stage, (times[stage] - previous) * 1000))
                steps.setdefault(stage, []).append(row[-1][1])
                previous = times[stage]
        rows.append(((times["request"] - times["posted"]) * 1000, tag, row))
    if not rows:
        print("  stage breakdown: no stamps")
        return
    print("  stage breakdown (ms since the stage before; n, p50, p99, max):")
    for stage in STAGES:
        if values := steps.get(stage):
            print(_spread_line(stage, values))
    parts: dict[str, list[float]] = {}  # each context part's end, from the parts' start (side by side)
    for times in stamps.values():
        if (start := times.get("context.session")) is not None:
            for stage, at in times.items():
                if stage.startswith("part.") and at >= start:
                    parts.setdefault(stage, []).append((at - start) * 1000)
    if parts:
        print("  context parts, each one's end since context.session (n, p50, p99, max):")
        for stage, values in sorted(parts.items()):
            print(_spread_line(stage, values))
    rows.sort(reverse=True)
    print("  the slowest @s:")
    for total, tag, row in rows[:6]:
        big = sorted(row, key=lambda step: -step[1])[:4]
        print(f"    {tag:>7} {total:6.1f} ms: " + ", ".join(f"{s} {ms:.1f}" for s, ms in big))


def spans_line(name: str, values: list[float], wanted: int) -> str:
    if not values:
        return f"  {name}: no samples (0/{wanted})"
    return (
        f"  {name}: n={len(values)}/{wanted}  p50 {percentile(values, 0.5):.1f} ms  "
        f"p99 {percentile(values, 0.99):.1f} ms  max {max(values):.1f} ms"
    )


Figures = dict[str, dict[str, float]]  # bot name -> figure name -> value, of one run


def report(args: argparse.Namespace, targets: list[Target], took: float) -> Figures:
    """Print the run's figures; return the headline ones (for ``--repeat``'s medians)."""
    bare = next((t for t in targets if t.model is None), None)
    wanted = len(targets[0].posted)
    figures: Figures = {}
    print(
        f"stream: {args.messages:,} messages in {args.groups} groups in {took:.1f} s "
        f"= {args.messages / took:,.0f} msg/s, {wanted} @ (one in {args.at_every})"
    )
    per_message = {}
    for target in targets:
        sends = target.first_sends()
        to_send = [(sends[t] - target.posted[t]) * 1000 for t in target.posted if t in sends]
        per_message[target.name] = target.cpu / args.messages * 1000
        print(
            f"{target.name}: CPU {target.cpu:.1f} s = {per_message[target.name]:.3f} ms per message; "
            f"lost {wanted - len(to_send)} of {wanted} @"
        )
        print(spans_line("@ -> first send", to_send, wanted))
        mine = figures[target.name] = {"CPU ms per message": per_message[target.name]}
        if to_send:
            mine["@ -> first send p50"] = percentile(to_send, 0.5)
            mine["@ -> first send p99"] = percentile(to_send, 0.99)
        if target.model is not None:
            requests: dict[str, float] = {}
            records = target.model.records()
            for line in records:
                if line["tag"] is not None:
                    requests.setdefault(line["tag"], line["received"])
            to_model = [(requests[t] - target.posted[t]) * 1000 for t in target.posted if t in requests]
            print(spans_line("@ -> model request", to_model, wanted))
            if to_model:
                mine["@ -> model request p50"] = percentile(to_model, 0.5)
                mine["@ -> model request p99"] = percentile(to_model, 0.99)
            if args.breakdown:
                breakdown(stage_stamps(target, requests))
            unprompted = sum(1 for line in records if line["tools"] and line["tag"] is None)
            print(f"  model requests: {len(records)} ({unprompted} unprompted episodes it chose to join)")
        mine["longest event-loop stall"] = target.stall_ms
        print(
            f"  longest event-loop stall {target.stall_ms:.0f} ms; full collections {target.gc_full}, "
            f"longest {target.gc_longest_ms:.0f} ms"
        )
        print(
            "  RSS MB by tenth of the stream: "
            + " ".join(f"{mb:.0f}" for mb in target.rss)
            + f"; at the end {rss_mb(target.pid):.0f}"
        )
        print(plateau_line(target.rss, args.messages))
        if len(target.cpu_marks) > 1:
            tenth = args.messages / (len(target.cpu_marks) - 1) / 1000  # thousands of messages
            loop = [(b - a) / tenth for a, b in itertools.pairwise(target.loop_cpu_marks)]
            whole = [(b - a) / tenth for a, b in itertools.pairwise(target.cpu_marks)]
            print("  CPU ms per message by tenth of the stream: " + " ".join(f"{ms:.2f}" for ms in whole))
            print("    the event loop's thread: " + " ".join(f"{ms:.2f}" for ms in loop))
            print(
                "    the other threads: "
                + " ".join(f"{ms - on_loop:.2f}" for ms, on_loop in zip(whole, loop, strict=True))
            )
    for target in targets:
        if bare is not None and target is not bare and per_message[bare.name]:
            ratio = per_message[target.name] / per_message[bare.name]
            figures[target.name]["CPU ratio to the bare bot"] = ratio
            print(f"CPU per message, {target.name} / {bare.name}: {ratio:.2f}x  (target <= 1.3x)")
    return figures


def medians(runs: list[Figures]) -> None:
    """``--repeat``: each headline figure's median over the runs, beside every run's value."""
    print(f"## medians over {len(runs)} runs (the same stream each time)")
    for name in runs[0]:
        print(f"{name}:")
        for figure in runs[0][name]:
            values = [run[name][figure] for run in runs if figure in run.get(name, {})]
            each = " ".join(f"{v:.2f}" if v < 10 else f"{v:.1f}" for v in values)
            print(f"  {figure:<26} median {statistics.median(values):8.2f}   runs: {each}")


def stall_report(path: Path, *, stalls: int = 8, stacks: int = 3, frames: int = 8) -> None:
    """The longest stalls ``bot.py`` traced: length, collections during it, the most sampled stacks
    (their innermost ``frames`` frames)."""
    if not path.exists():
        print(f"stall trace: no {path}")
        return
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    held = sorted((r["ms"] for r in records), reverse=True)
    print(
        f"stall trace: {len(records)} stalls past the threshold"
        + (f", longest {held[0]:.0f} ms, p50 {percentile(held, 0.5):.0f} ms" if held else "")
    )
    started = min((r["monotonic"] for r in records), default=0.0)
    for record in sorted(records, key=lambda r: -r["ms"])[:stalls]:
        gcs = ", ".join(
            f"gen{c['generation']} x{c['count']} {c['ms']:.0f} ms (CPU {c['cpu_ms']:.0f}, "
            f"freed {c['collected']})"
            for c in record["collections"]
            if c["ms"] >= 1
        )
        print(
            f"  {record['ms']:6.0f} ms at +{record['monotonic'] - started:5.0f} s, "
            f"{record['samples']} samples; "
            f"CPU over {record['window_ms']:.0f} ms: loop {record['loop_cpu_ms']:.0f}, "
            f"process {record['process_cpu_ms']:.0f}" + (f"; collections: {gcs}" if gcs else "")
        )
        for stack, count in record["stacks"][:stacks]:
            inner = stack.split(";")[-frames:]
            print(f"    {count:>4}  " + " <- ".join(reversed(inner)))


def memory_report(path: Path, *, places: int = 12) -> None:
    """What ``bot.py``'s memory trace found: traced size, RSS and the growth of each interval along it,
    and the places that grew most by its last record, since the first snapshot and over the last
    interval (innermost frame first)."""
    if not path.exists():
        print(f"memory trace: no {path} (the stream ended before --trace-after?)")
        return
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if not records:
        print(f"memory trace: {path} is empty")
        return
    last = records[-1]
    traced = " ".join(f"{r['traced_mb']:.0f}" for r in records)
    rss = " ".join("?" if r["rss_mb"] is None else f"{r['rss_mb']:.0f}" for r in records)
    intervals = " ".join(f"{r['since_previous']['kb'] / 1024:+.1f}" for r in records)
    print(
        f"memory trace: {len(records)} snapshots over {last['traced_s']:.0f} s of tracing "
        f"(the last took {last['snapshot_ms'] / 1000:.1f} s)\n"
        f"  traced MB {traced}; RSS MB {rss}\n"
        f"  growth per interval, MB (the last one up to the stop): {intervals}"
    )
    for label, key in (
        ("since the first snapshot", "since_first"),
        ("over the last interval", "since_previous"),
    ):
        print(f"  {label}: {last[key]['kb'] / 1024:+.1f} MB in all; most:")
        for place in last[key]["top"][:places]:
            where = " <- ".join(reversed(place["where"].split(";")))
            grown, now = place["kb"] / 1024, place["kb_now"] / 1024
            print(f"    {grown:+8.2f} MB {place['blocks']:+9,d} blocks  ({now:.2f} MB now)  {where}")


def _baseline_trace(path: Path) -> Path:
    """Where the ``--baseline`` bot writes its stall trace, beside ``path``."""
    return path.with_name(f"{path.stem}-baseline{path.suffix}")


def plateau_line(rss: list[float], messages: int) -> str:
    """RSS growth per 1,000 messages over the stream's first and last halves: a bounded process's
    second figure falls toward 0 as its caps fill (docs/RUNTIME.md, "Memory bound")."""
    if len(rss) < 5:
        return "  RSS plateau: too few samples"
    per_tenth = messages / 10 / 1000
    half = len(rss) // 2
    first = (rss[half] - rss[0]) / (half * per_tenth)
    last = (rss[-1] - rss[half]) / ((len(rss) - 1 - half) * per_tenth)
    return f"  RSS growth per 1,000 messages: first half {first:.2f} MB, second half {last:.2f} MB"


def start_profile(args: argparse.Namespace, pid: int, seconds: float) -> subprocess.Popen[bytes] | None:
    if args.profile is None:
        return None
    spy = args.py_spy or shutil.which("py-spy")
    if spy is None:
        print("no py-spy: pass --py-spy PATH")
        return None
    return subprocess.Popen(
        [spy, "record", "-p", str(pid), "-d", str(int(seconds) + 1), "-r", "200", "-f", "raw", "--gil",
         "-o", str(args.profile), "--nonblocking"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip


def _last_line(record: dict[str, Any]) -> str:
    lines = str(record.get("exception") or record.get("error") or "").splitlines()
    return lines[-1] if lines else ""


def greywind(
    name: str, workdir: Path, model: ModelProcess, env: dict[str, str], script: Path, breakdown: bool
) -> Target:
    stages = workdir.parent / f"{workdir.name}-stages.tsv" if breakdown else None
    if stages is not None:
        env = {**env, STAGE_TRACE: str(stages)}
    return Target(
        name,
        BotProcess(
            workdir,
            config=CONFIG,
            env={
                **env,
                "SUPERUSERS": f'["{ADMIN}"]',
                "GREYWIND_LLM_BASE_URL": model.base_url,
                "GREYWIND_LLM_MODEL": "scripted",
                "GREYWIND_LLM_API_KEY": "sk-bench",
            },
            script=script,
        ),
        model=model,
        stages=stages,
    )


async def run(args: argparse.Namespace) -> Figures:
    figures: Figures = {}
    with contextlib.ExitStack() as processes:
        tmp = Path(processes.enter_context(tempfile.TemporaryDirectory(prefix="greywind-side-")))
        env = {"LOG_LEVEL": args.log_level}
        model = processes.enter_context(ModelProcess(tmp))
        bot_env, baseline_env = env, env
        if args.stall_trace is not None:
            bot_env = {**env, STALL_TRACE: str(args.stall_trace.resolve())}
            baseline_env = {**env, STALL_TRACE: str(_baseline_trace(args.stall_trace).resolve())}
        if args.trace_memory is not None:
            args.trace_memory.unlink(missing_ok=True)
            bot_env = {
                **bot_env,
                memory_trace.ENV: str(args.trace_memory.resolve()),
                memory_trace.AFTER_ENV: str(args.trace_after),
                memory_trace.EVERY_ENV: str(args.trace_every),
                memory_trace.FRAMES_ENV: str(args.trace_frames),
            }
        bot = greywind("bot.py", tmp / "bot", model, bot_env, ROOT / "bot.py", args.breakdown)
        targets = [bot]
        if args.baseline is not None:
            (tmp / "baseline-model").mkdir()
            second = processes.enter_context(ModelProcess(tmp / "baseline-model"))
            name = f"bot.py of {args.baseline}"
            targets.append(
                greywind(
                    name, tmp / "baseline", second, baseline_env, args.baseline / "bot.py", args.breakdown
                )
            )
        bare = Target(
            "bare NoneBot", BotProcess(tmp / "bare", env=env, script=ROOT / "bench" / "bare_bot.py")
        )
        if not args.no_bare:
            targets.append(bare)
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, log level {args.log_level}")
        try:
            for target in targets:
                target.process.start()
                print(f"{target.name}: pid {target.pid}, RSS at start {rss_mb(target.pid):.0f} MB")
            async with contextlib.AsyncExitStack() as stack:
                for target in targets:
                    target.peer = await stack.enter_async_context(
                        OneBotPeer(target.process.ws_url, self_id=SELF_ID)
                    )
                await asyncio.sleep(1.5)  # registered by every bot
                for target in targets:
                    target.rss.append(rss_mb(target.pid))
                    mark_cpu(target)
                    target.cpu_start = target.cpu_marks[0]
                spy = start_profile(args, bot.pid, args.messages / args.rate)
                print(f"streaming {args.messages:,} messages at {args.rate:,.0f}/s ...")
                took = await drive(args, targets)
                print(f"posted in {took:.1f} s; waiting for the last answers ...")
                await wait_answered(targets, within=args.answer_within)
                for target in targets:
                    target.cpu = cpu_seconds(target.pid) - target.cpu_start
                if spy is not None:
                    spy.wait(30)
                for target in targets:
                    await read_stalls(target)
                figures = report(args, targets, took)
                if args.stall_trace is not None:
                    stall_report(args.stall_trace)
                    if args.baseline is not None:
                        print(f"the baseline's ({args.baseline}):")
                        stall_report(_baseline_trace(args.stall_trace))
                print(f"load average {os.getloadavg()[0]:.2f}")
        finally:
            for target in targets:
                with contextlib.suppress(Exception):
                    target.process.stop(timeout=60)
                target.process.kill()
                if target.model is None:
                    continue
                records = target.process.records()
                dropped = {
                    name: sum(int(r.get("dropped") or 0) for r in records if r.get("event") == event)
                    for name, event in (
                        ("store writes", "store.writes_dropped"),
                        ("frames", "onebot_backlog_full"),
                    )
                }
                print(
                    f"{target.name} dropped (its log): "
                    + ", ".join(f"{n} {name}" for name, n in dropped.items())
                )
                errors = [r for r in records if r.get("level") in ("error", "critical")]
                if errors:
                    kinds = Counter(
                        f"{r.get('event')}: {r.get('kind') or ''} {_last_line(r)}"[:160] for r in errors
                    )
                    print(f"{target.name} logged {len(errors)} errors:")
                    for kind, count in kinds.most_common(5):
                        print(f"  {count:>5}  {kind}")
            if args.trace_memory is not None:
                memory_report(args.trace_memory)  # its last record is written as bot.py stops
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--rate", type=float, default=200.0, help="messages per second, all groups")
    parser.add_argument("--messages", type=int, default=12_000)
    parser.add_argument("--at-every", type=int, default=100, help="one message in this many is an @")
    parser.add_argument(
        "--mention-every", type=int, default=50, help="one message in this many names the bot mid-text"
    )
    parser.add_argument(
        "--no-bare", action="store_true", help="leave the bare bot out (a soak past what it keeps up with)"
    )
    parser.add_argument("--soak", action="store_true", help="60,000 messages")
    parser.add_argument("--log-level", default="WARNING", help="both bots' LOG_LEVEL")
    parser.add_argument("--profile", type=Path, help="py-spy's collapsed stacks of bot.py, here")
    parser.add_argument("--py-spy", help="the py-spy executable")
    parser.add_argument(
        "--baseline", type=Path, help="also drive the bot.py of this tree (another version), same stream"
    )
    parser.add_argument("--answer-within", type=float, default=30.0, help="seconds to wait for the last @s")
    parser.add_argument(
        "--breakdown", action="store_true", help="where each @ spent its time on the way to the model"
    )
    parser.add_argument(
        "--stall-trace",
        type=Path,
        help="bot.py's loop stalls past 40 ms, with their stacks, here (JSON lines)",
    )
    parser.add_argument(
        "--trace-memory", type=Path, help="bot.py's memory growth by allocating line, here (JSON lines)"
    )
    parser.add_argument(
        "--trace-after", type=float, default=60.0, help="seconds into bot.py's life before tracing starts"
    )
    parser.add_argument("--trace-every", type=float, default=60.0, help="seconds between snapshots")
    parser.add_argument("--trace-frames", type=int, default=1, help="frames kept per allocation")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run the stream this many times, fresh processes each, and print each headline figure's median",
    )
    args = parser.parse_args(argv)
    if args.soak:
        args.messages = 60_000
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    runs = []
    for n in range(max(1, args.repeat)):
        if args.repeat > 1:
            print(f"## run {n + 1} of {args.repeat}")
        runs.append(asyncio.run(run(args)))
    if len(runs) > 1:
        medians(runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
