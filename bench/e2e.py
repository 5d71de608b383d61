"""End-to-end benchmark: the real ``bot.py``, its real reverse WebSocket, a model server in its own process.

Three processes on loopback: this script (a OneBot v11 peer, ``tests/e2e/onebot_peer.py``), the bot
(``tests/e2e/bot_process.py``), and a scripted OpenAI-compatible server (this file run with
``--model-server``) that answers at once and records, per request, when it arrived and when it was
answered (``time.monotonic()``, one clock for every process on the machine).

**Latency phase.** ``--groups`` groups post at once on the one connection, as an account in many
groups sees it: each group is its own task posting at Poisson times, chatter and now and then an @ of
the bot carrying a unique tag, ``--rate`` messages per second in all (one in ``--chatter-per-at`` + 1
an @), until ``--addressed`` @s were posted. For every @ the tag is followed through the model
request (the packet carries it) to the answer and the send call back to the peer:

- **receipt -> model request**: the peer posting the event -> the model server receiving the request;
- **model answer -> send call**: the model server answering -> the peer receiving ``send_group_msg``.

Model time is excluded (the server answers at once, and the two spans stop and start on its clock
readings). Target p95 <= 50 ms each. **Lost**: @s with no answer, split into "asked the model but
sent nothing" and "never reached the model"; target 0. Keep the @ rate under 10 per second: that is
``outbound.max_per_minute = 600``, the most the config allows for one account, and above it answers
queue for send tokens (holding their episode slots, so other chats' model requests wait too).

**Memory phase.** Chatter only (no model call), ``--soak`` messages at ``--soak-rate`` per second over
the same groups and a pool of users, with an @ probe every ``--probe-every`` messages (its two spans
reported too). Every tenth of the run the bot's RSS (``/proc/<pid>/status``) is printed beside what
its kernel has ingested (read from its own ``/status``, asked in private) and the backlog; the last
line is the RSS slope over the second half. **Messages lost** = posted - ingested by the kernel once
the backlog has drained. The issue's figure is 1,000,000 messages (``--soak 1000000``); the default
fits a few minutes. Keep ``--soak-rate`` under what the bot ingests (the ``msg/s`` column, and the
backlog staying near 0), or the probes measure the backlog instead of the pipeline.

What bounds the bot's memory however long it runs: per chat, the kernel's thread tracker keeps at most
``threads.max_messages_per_chat`` message ids, ``max_threads_per_chat`` threads and 512 speakers; the
recent-message buffer and the ``why`` log 64 messages each; the lexicon ``max_terms_per_scope`` terms
(``max_terms_global`` in all); terminal events are pruned by age and count. Across chats: at most
``threads.max_chats`` chats, 4,096 sent message ids, the store writer's queue (``store.queue_max``),
the dispatcher's queues and the OneBot frame backlog (``bot.event_backlog_mb``). Messages themselves
go to SQLite, not memory. So RSS grows while each chat's caps fill (200 groups x 500 ids = 100,000
messages for the largest) and then stays flat.

Budgets are opened up and the account-wide send rate set to the most the config allows (see
``CONFIG``); everything else is the shipped configuration. The load average is printed, since the
figures depend on what else the machine runs. ``--backend postgresql`` stores on PostgreSQL
(``$GREYWIND_PG_DSN``, or a throwaway server for the run) instead of the SQLite file.

    .venv/bin/python bench/e2e.py [--groups 200] [--addressed 300] [--rate 100] [--chatter-per-at 19]
                                  [--soak 60000] [--soak-rate 300] [--probe-every 1000] [--seed 7]
                                  [--backend sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._backends import postgres_database  # noqa: E402
from bench._measure import describe, rss_mb  # noqa: E402
from tests.e2e.bot_process import BotProcess  # noqa: E402
from tests.e2e.onebot_peer import OneBotPeer  # noqa: E402
from tests.support import onebot_events as ob  # noqa: E402

SELF_ID = 10_000
ADMIN = 4_242
FIRST_GROUP = 700_000
USERS = 2_000
CONFIG = """
[budget.forced]
min_interval_ms = 0
max_per_window = 100000
window_ms = 600000

[outbound]
max_per_minute = 600   # the most the config allows
burst = 100
"""
CHATTER = [
    "今天吃什么",
    "哈哈哈哈",
    "有人打游戏吗",
    "这个报错怎么解决",
    "明天开会吗",
    "好的收到",
    "周末去爬山吧",
    "笑死",
    "[图片]",
    "刚下班，累死了",
    "这个新番还挺好看的",
    "谁有充电宝",
]
_TAG = re.compile(r"〈(b\d+)〉")
_COUNTED = re.compile(r"收到消息 (\d+)")
_INGESTED = re.compile(r"内核：收到 (\d+) 条")


# ------------------------------------------------------------------------------------- model server


def serve_model(port_file: Path, record: Path) -> int:
    """The scripted model: a reply naming the tag for an @, ``observe`` for anything else."""
    from tests.support.openai_server import RecordedRequest, ScriptedOpenAIServer

    out = record.open("a", encoding="utf-8", buffering=1)
    lock = threading.Lock()
    compression = {"text": json.dumps({"summary": {"requirements": [], "open_questions": []}})}
    observe = {"tool_calls": [{"name": "observe", "arguments": {"reason": "bench"}}]}

    def respond(request: RecordedRequest) -> dict[str, Any] | None:
        received = time.monotonic()
        if request.kind != "chat":
            return None
        tags = _TAG.findall(request.last_user_text) if request.tools else []
        tag = tags[-1] if tags else None
        if not request.tools:
            step: dict[str, Any] = compression
        elif tag is None:
            step = observe
        else:
            step = {"text": f"收到〈{tag}〉"}
        line = {"tag": tag, "tools": bool(request.tools), "received": received, "answered": time.monotonic()}
        with lock:
            out.write(json.dumps(line) + "\n")
        return step

    server = ScriptedOpenAIServer()
    server.respond_with(respond)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    server.start()
    port_file.write_text(str(server.port))
    try:
        done.wait()
    finally:
        server.stop()
        out.close()
    return 0


class ModelProcess:
    def __init__(self, workdir: Path) -> None:
        self.record = workdir / "model.jsonl"
        self._port_file = workdir / "model.port"
        self._proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def __enter__(self) -> ModelProcess:
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--model-server",
             "--port-file", str(self._port_file), "--record", str(self.record)],
        )  # fmt: skip
        deadline = time.monotonic() + 15
        while not self._port_file.exists() or not self._port_file.read_text():
            if time.monotonic() > deadline or self._proc.poll() is not None:
                raise RuntimeError("the model server did not start")
            time.sleep(0.05)
        self.port = int(self._port_file.read_text())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def records(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text(encoding="utf-8").splitlines() if line]


# ------------------------------------------------------------------------------------- measuring


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """User + system CPU time the process (or one of its threads) has used (``/proc/<pid>/stat``).
    The event loop's thread is the main thread, whose id is the process's."""
    stat = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Addressed:
    """Every @ posted, by tag: when it was posted, and which were a group's first."""

    posted: dict[str, float] = field(default_factory=dict)
    first_in_group: set[str] = field(default_factory=set)
    groups: set[int] = field(default_factory=set)
    count: int = 0

    def new(self) -> str:
        self.count += 1
        return f"b{self.count}"


def group_frame(group: int, user: int, message: list[dict[str, Any]]) -> str:
    event = ob.group_message(self_id=SELF_ID, group_id=group, user_id=user, message=message)
    return json.dumps(event, ensure_ascii=False)


async def post_addressed(peer: OneBotPeer, tags: Addressed, group: int, user: int) -> None:
    tag = tags.new()
    if group not in tags.groups:
        tags.groups.add(group)
        tags.first_in_group.add(tag)
    frame = group_frame(group, user, [ob.at(SELF_ID), ob.text(f" 〈{tag}〉帮我看看这个")])
    tags.posted[tag] = time.monotonic()
    await peer.post_raw(frame)


def spans(
    tags: Addressed, peer: OneBotPeer, model: ModelProcess, only: set[str] | None = None
) -> tuple[list[float], list[float], dict[str, int]]:
    """(receipt -> request, answer -> send) in ms, and how the unanswered are accounted for."""
    requests: dict[str, dict[str, Any]] = {}
    for line in model.records():
        if line["tag"] is not None:
            requests.setdefault(line["tag"], line)
    sends: dict[str, float] = {}
    for call in peer.sends():
        if (m := _TAG.search(call.text)) is not None:
            sends.setdefault(m.group(1), call.at)
    wanted = [t for t in tags.posted if only is None or t in only]
    to_model = [(requests[t]["received"] - tags.posted[t]) * 1000 for t in wanted if t in requests]
    to_send = [(sends[t] - requests[t]["answered"]) * 1000 for t in wanted if t in sends and t in requests]
    fate = {
        "answered": sum(1 for t in wanted if t in sends),
        "model asked, nothing sent": sum(1 for t in wanted if t in requests and t not in sends),
        "never reached the model": sum(1 for t in wanted if t not in requests and t not in sends),
    }
    return to_model, to_send, fate


async def wait_answered(peer: OneBotPeer, tags: Addressed, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        answered = {m.group(1) for c in peer.sends() if (m := _TAG.search(c.text))}
        if answered >= set(tags.posted):
            return
        await asyncio.sleep(0.1)


@dataclass(frozen=True)
class Counts:
    edge: int  # events the edge converted (commands included)
    kernel: int  # messages the runtime's kernel ingested
    text: str = ""  # the whole /status answer (dispatcher waits, episodes, store...)


async def bot_counts(peer: OneBotPeer) -> Counts:
    """The bot's own counts, from ``/status full`` asked in private (a long status comes in parts)."""
    before = len(peer.calls)
    await peer.post_raw(
        json.dumps(ob.private_message(self_id=SELF_ID, user_id=ADMIN, message=[ob.text("/status full")]))
    )
    await peer.wait_for_call(
        "send_private_msg", lambda call: _INGESTED.search(call.text) is not None, after=before, within=300
    )
    text = "\n".join(call.text for call in peer.calls[before:] if call.action == "send_private_msg")
    edge, kernel = _COUNTED.search(text), _INGESTED.search(text)
    if edge is None or kernel is None:
        raise RuntimeError(f"unreadable /status: {text!r}")
    return Counts(int(edge.group(1)), int(kernel.group(1)), text)


# ------------------------------------------------------------------------------------- phases


async def latency_phase(args: argparse.Namespace, peer: OneBotPeer, model: ModelProcess, pid: int) -> int:
    rng = random.Random(args.seed)
    groups = [FIRST_GROUP + n for n in range(args.groups)]
    tags = Addressed()
    share = args.addressed / max(1, args.addressed * args.chatter_per_at + args.addressed)
    per_group_interval = args.groups / args.rate
    posted = 0
    stop = asyncio.Event()

    async def group_task(group: int) -> None:
        nonlocal posted
        local = random.Random(rng.random())
        await asyncio.sleep(local.uniform(0, per_group_interval))
        while not stop.is_set():
            if local.random() < share:
                if tags.count >= args.addressed:
                    stop.set()
                    return
                await post_addressed(peer, tags, group, local.randrange(1, USERS))
            else:
                text = local.choice(CHATTER)
                await peer.post_raw(group_frame(group, local.randrange(1, USERS), [ob.text(text)]))
            posted += 1
            # Poisson arrivals per group: the groups' bursts overlap as they would.
            await asyncio.sleep(local.expovariate(1 / per_group_interval))

    started, cpu = time.monotonic(), cpu_seconds(pid)
    await asyncio.gather(*(group_task(g) for g in groups))
    elapsed = time.monotonic() - started
    await wait_answered(peer, tags, within=60)
    cpu = cpu_seconds(pid) - cpu
    to_model, to_send, fate = spans(tags, peer, model)
    print(
        f"latency phase: {args.groups} groups, {posted:,} messages ({tags.count} @) in {elapsed:.1f} s "
        f"= {posted / elapsed:,.0f} msg/s, {tags.count / elapsed:.1f} @/s"
    )
    print("  " + describe("receipt -> model request", to_model, tags.count))
    print("  " + describe("model answer -> send call", to_send, tags.count))
    # A group's first @ opens its first session (and a memory compression); the rest reuse it.
    firsts = tags.first_in_group
    later = set(tags.posted) - firsts
    print(
        "  "
        + describe(
            "receipt -> model request, a group's first @", spans(tags, peer, model, firsts)[0], len(firsts)
        )
    )
    print(
        "  " + describe("receipt -> model request, later @s", spans(tags, peer, model, later)[0], len(later))
    )
    print(
        f"  bot CPU: {cpu:.1f} s, {cpu / elapsed:.0%} of one core, {cpu / posted * 1000:.2f} ms per message"
    )
    lost = tags.count - fate["answered"]
    print(f"  lost: {lost} of {tags.count} @  ({', '.join(f'{k} {v}' for k, v in fate.items())})")
    return posted


async def memory_phase(
    args: argparse.Namespace, peer: OneBotPeer, model: ModelProcess, pid: int, already: int
) -> None:
    rng = random.Random(args.seed + 1)
    groups = [FIRST_GROUP + n for n in range(args.groups)]
    tags = Addressed()
    tags.count = 1_000_000  # probe tags apart from the latency phase's
    probes: set[str] = set()
    posted = already  # messages that reach the kernel; /status asks reach only the edge
    asks = 0

    async def sample(n: int, rate: str) -> Counts:
        nonlocal asks
        counts = await bot_counts(peer)
        asks += 1
        rss = rss_mb(pid)
        curve.append((n, rss))
        print(f"  {n:>10,}  {rss:>7.1f}  {counts.kernel:>10,}  {posted - counts.kernel:>8,}  {rate:>7}")
        return counts

    print(
        f"memory phase: {args.soak:,} chatter messages in {args.groups} groups at {args.soak_rate:,.0f}/s, "
        f"an @ every {args.probe_every:,}"
    )
    print(f"  {'messages':>10}  {'RSS MB':>7}  {'ingested':>10}  {'backlog':>8}  {'msg/s':>7}")
    curve: list[tuple[int, float]] = []
    await sample(0, "")
    cpu, began = cpu_seconds(pid), time.monotonic()
    tenth = max(1, args.soak // 10)
    started = last_t = time.monotonic()
    last_n = 0
    for n in range(1, args.soak + 1):
        ahead = started + n / args.soak_rate - time.monotonic()
        if ahead > 0:
            await asyncio.sleep(ahead)
        group = groups[n % len(groups)]
        await peer.post_raw(group_frame(group, rng.randrange(1, USERS), [ob.text(rng.choice(CHATTER))]))
        posted += 1
        if n % args.probe_every == 0:
            await post_addressed(peer, tags, group, rng.randrange(1, USERS))
            probes.add(f"b{tags.count}")
            posted += 1
        if n % tenth == 0:
            now = time.monotonic()
            rate = f"{(n - last_n) / (now - last_t):,.0f}"
            await sample(n, rate)
            # The pacing restarts after the sample: the time the count took is not made up in a burst.
            started, last_t, last_n = time.monotonic() - n / args.soak_rate, time.monotonic(), n
    # Until the kernel has ingested everything posted: what it never ingests is lost.
    deadline = time.monotonic() + 120
    counts = await bot_counts(peer)
    asks += 1
    while counts.kernel < posted and time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        counts = await bot_counts(peer)
        asks += 1
    cpu, took = cpu_seconds(pid) - cpu, time.monotonic() - began
    print(
        f"  bot CPU: {cpu:.1f} s in {took:.0f} s, {cpu / took:.0%} of one core, "
        f"{cpu / (posted - already) * 1000:.2f} ms per message"
    )
    await wait_answered(peer, tags, within=30)
    to_model, to_send, fate = spans(tags, peer, model, only=probes)
    print("  " + describe("probe receipt -> model request", to_model, len(probes)))
    print("  " + describe("probe model answer -> send call", to_send, len(probes)))
    print(f"  probes lost: {len(probes) - fate['answered']} of {len(probes)}")
    records = model.records()
    unprompted = sum(1 for line in records if line["tools"] and line["tag"] is None)
    compression = sum(1 for line in records if not line["tools"])
    print(
        f"  model requests over the whole run: {len(records)} ({unprompted} unprompted episodes the kernel "
        f"chose to join, {compression} compression calls)"
    )
    edge_expected = posted + asks
    print(
        f"  messages lost: {max(0, posted - counts.kernel)} of {posted:,} "
        f"(kernel ingested {counts.kernel:,}; edge counted {counts.edge:,} of {edge_expected:,} "
        f"events incl. {asks} /status)"
    )
    print("  the bot's own /status at the end (where queued work waited):")
    print("\n".join(f"    | {line}" for line in counts.text.splitlines()))
    if len(curve) >= 4:
        half = curve[len(curve) // 2 :]
        slope = (half[-1][1] - half[0][1]) / max(1, half[-1][0] - half[0][0]) * 1_000_000
        print(f"  RSS slope over the second half: {slope:+.1f} MB per million messages")


async def run(args: argparse.Namespace) -> int:
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        where: contextlib.AbstractContextManager[str] = contextlib.nullcontext(str(args.workdir))
    else:
        where = tempfile.TemporaryDirectory(prefix="greywind-e2e-bench-")
    database: contextlib.AbstractContextManager[str | None] = (
        postgres_database("e2e") if args.backend == "postgresql" else contextlib.nullcontext(None)
    )
    with where as tmp, ModelProcess(Path(tmp)) as model, database as dsn:
        store = "" if dsn is None else f'\n[store]\nbackend = "postgresql"\nlease_accounts = ["{SELF_ID}"]\n'
        bot = BotProcess(
            Path(tmp) / "bot",
            config=CONFIG + store,
            env={
                "SUPERUSERS": f'["{ADMIN}"]',
                "LOG_LEVEL": args.log_level,
                "GREYWIND_LLM_BASE_URL": model.base_url,
                "GREYWIND_LLM_MODEL": "scripted",
                "GREYWIND_LLM_API_KEY": "sk-bench",
                **({} if dsn is None else {"GREYWIND_PG_DSN": dsn}),
            },
        )
        bot.start()
        assert bot.pid is not None
        pid = bot.pid
        print(
            f"bot pid {pid}, RSS at start {rss_mb(pid):.1f} MB, log level {args.log_level}, "
            f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
        )
        try:
            async with OneBotPeer(bot.ws_url, self_id=SELF_ID) as peer:
                await asyncio.sleep(1.0)  # registered by the bot
                posted = await latency_phase(args, peer, model, pid) if args.addressed else 0
                print(f"  RSS after the latency phase: {rss_mb(pid):.1f} MB")
                if args.soak:
                    await memory_phase(args, peer, model, pid, posted)
                print(f"RSS at the end: {rss_mb(pid):.1f} MB, load average {os.getloadavg()[0]:.2f}")
        finally:
            with contextlib.suppress(Exception):
                code = bot.stop(timeout=60)
                print(f"bot exit status {code}")
            bot.kill()
            errors = [r for r in bot.records() if r.get("level") in ("error", "critical")]
            if errors:
                first = json.dumps(errors[0], ensure_ascii=False)[:300]
                print(f"bot logged {len(errors)} errors; first: {first}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--addressed", type=int, default=300, help="@s in the latency phase (0: skip it)")
    parser.add_argument("--chatter-per-at", type=float, default=19.0, help="chatter messages per @ there")
    parser.add_argument("--rate", type=float, default=100.0, help="messages per second in the latency phase")
    parser.add_argument("--soak", type=int, default=60_000, help="chatter messages in the memory phase")
    parser.add_argument("--soak-rate", type=float, default=300.0)
    parser.add_argument("--probe-every", type=int, default=1_000)
    parser.add_argument("--log-level", default="WARNING", help="the bot's LOG_LEVEL (INFO logs every event)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--workdir", type=Path, help="keep the bot's data, log and the model's record here")
    parser.add_argument("--model-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # figures as they come
    if args.model_server:
        return serve_model(args.port_file, args.record)
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
