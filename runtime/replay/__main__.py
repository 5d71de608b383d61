"""The command line: ``python -m runtime.replay CHATLOG.jsonl`` or ``--from-db DATA_DIR``.

stdout (or ``--out``): one JSON line per message and per activation (see ``runtime.replay.engine``).
stderr: skipped input lines with their line numbers, then the per-chat table. Exit status: 0 when the
replay ran (malformed lines do not fail it), 2 when it could not start (bad arguments, config, input).
The same log gives the same output in every run, whatever ``PYTHONHASHSEED``: the kernel never lets
the iteration order of a set of strings decide anything.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from runtime.config import (
    DEFAULT_CONFIG_PATH,
    ConfigError,
    GreyWindConfig,
    config_path,
    load_config,
    parse_config,
)
from runtime.kernel.settings import KernelSettings
from runtime.logs import configure_logging
from runtime.quiet_history import QUIET_HISTORY_FILE, QuietTimeline
from runtime.replay import ReplayError
from runtime.replay.addressing import Addressing
from runtime.replay.database import convert_stored, guess_self_id, load_stored_messages
from runtime.replay.engine import Maintenance
from runtime.replay.packets import PacketAssembler
from runtime.replay.plot import PLOT_HINT, AttentionTrace, render
from runtime.replay.reader import SourceMessage, read_log
from runtime.replay.report import ReplayReport
from runtime.replay.run import JsonLinesWriter, Observer, run_replay

DEFAULT_SELF_ID = "10000"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runtime.replay",
        description="Run the bot's kernel over a chat log on a virtual clock: why it would (not) speak.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "chatlog", nargs="?", type=Path, help="JSON lines, one message a line ('-' for stdin)"
    )
    source.add_argument("--from-db", type=Path, metavar="DATA_DIR", help="replay the bot's own database")
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="GreyWind TOML config (default: $GREYWIND_CONFIG or config/greywind.toml)",
    )
    parser.add_argument(
        "--self-id",
        type=int,
        metavar="N",
        help=f"the bot's QQ id (default {DEFAULT_SELF_ID}; with --from-db, the id it sent from)",
    )
    parser.add_argument("--out", type=Path, metavar="OUT.jsonl", help="write the JSON lines here, not stdout")
    parser.add_argument(
        "--dump-packets",
        type=Path,
        metavar="DIR",
        help="write the assembled packet of every would-speak activation as JSON into DIR",
    )
    parser.add_argument(
        "--plot",
        type=Path,
        metavar="FILE.png",
        help="draw attention over time per chat (needs matplotlib: greywind[plot])",
    )
    return parser


def _config(path: Path | None, err: TextIO) -> GreyWindConfig:
    if path is not None:
        return load_config(path)
    default = config_path()
    if default.is_file():
        return load_config(default)
    if default != DEFAULT_CONFIG_PATH:
        return load_config(default)  # GREYWIND_CONFIG names a missing file: refuse, as the bot would
    print(f"replay: no {default}; using the built-in defaults", file=err)
    return parse_config({})


def _read_chatlog(path: Path, addressing: Addressing, err: TextIO) -> list[SourceMessage]:
    label = "<stdin>" if str(path) == "-" else str(path)
    try:
        if str(path) == "-":
            messages, problems = read_log(sys.stdin.buffer, addressing)
        else:
            with path.open("rb") as handle:
                messages, problems = read_log(handle, addressing)
    except OSError as exc:
        raise ReplayError(f"cannot read {label}: {exc.strerror or exc}") from exc
    for problem in problems:
        print(f"{label}: {problem} (skipped)", file=err)
    if problems:
        print(f"{label}: {len(problems)} line(s) skipped", file=err)
    return messages


async def _main(args: argparse.Namespace, cfg: GreyWindConfig, out: TextIO, err: TextIO) -> int:
    names = (cfg.persona.name, *cfg.persona.aliases)
    self_id = str(args.self_id) if args.self_id is not None else None
    quiet = None
    if args.from_db is not None:
        quiet = QuietTimeline.load(args.from_db / QUIET_HISTORY_FILE)  # as the bot applied them
        stored = await load_stored_messages(args.from_db)
        self_id = self_id or guess_self_id(stored) or DEFAULT_SELF_ID
        messages, skipped = convert_stored(stored, Addressing(self_id, names, cfg.bot.max_message_chars))
        for reason in skipped:
            print(f"{args.from_db}: {reason} (skipped)", file=err)
    else:
        self_id = self_id or DEFAULT_SELF_ID
        messages = _read_chatlog(args.chatlog, Addressing(self_id, names, cfg.bot.max_message_chars), err)

    settings = KernelSettings.from_config(cfg, self_ids=(self_id,))
    lexicon = cfg.lexicon
    maintenance = Maintenance(lexicon.learn_interval_ms / 1000, lexicon.decay_interval_ms / 1000)
    report = ReplayReport()
    trace = AttentionTrace() if args.plot is not None else None
    observers: list[Observer] = [JsonLinesWriter(out), report]
    if trace is not None:
        observers.append(trace)
    with tempfile.TemporaryDirectory(prefix="greywind-replay-") as scratch:
        packets = await PacketAssembler.open(cfg, scratch=Path(scratch), directory=args.dump_packets)
        try:
            await run_replay(
                messages,
                settings,
                observers=observers,
                packets=packets,
                maintenance=maintenance,
                quiet=quiet,
            )
        finally:
            await packets.aclose()
    out.flush()

    print(report.render(), file=err)
    print(
        "calls: one model call per would-speak (an episode's first); tokens: TokenEstimator over the "
        "assembled packets and the control tools",
        file=err,
    )
    if args.dump_packets is not None:
        print(f"packets: {packets.statistics().files} written to {args.dump_packets}", file=err)
    if trace is not None:
        drawn = render(trace, args.plot, high=cfg.attention.high, medium=cfg.attention.medium)
        print(f"plot: {args.plot} ({len(drawn)} of {trace.statistics().chats} chats)", file=err)
    return 0


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    err = stderr or sys.stderr
    if args.plot is not None and importlib.util.find_spec("matplotlib") is None:
        # Refused before anything runs: a long replay should not end in a missing dependency.
        print(f"replay: {PLOT_HINT}", file=err)
        return 2
    configure_logging(level="WARNING", stream=err)
    try:
        cfg = _config(args.config, err)
    except ConfigError as exc:
        print(f"replay: {exc}", file=err)
        return 2
    handle: TextIO | None = None
    try:
        if args.out is not None:
            handle = args.out.open("w", encoding="utf-8", newline="\n")
        out = handle or stdout or sys.stdout
        return asyncio.run(_main(args, cfg, out, err))
    except (ReplayError, OSError) as exc:
        print(f"replay: {exc}", file=err)
        return 2
    finally:
        if handle is not None:
            handle.close()


if __name__ == "__main__":
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")
    sys.exit(main())
