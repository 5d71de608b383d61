"""kill -9 under load: of what a OneBot peer sent, how much the real ``bot.py`` lost.

Each round starts ``bot.py`` (shadow mode, the shipped config), sends ``--messages`` group messages
over ``--groups`` groups from a OneBot peer (``tests/e2e/onebot_peer.py``) at ``--rate`` per second
(0: as fast as the peer can), kills the bot with SIGKILL ``--read-wait`` seconds after the last frame,
starts it again on the same data directory and stops it cleanly (``tests/faults/kill_flood.py``).
Printed per round: sent, stored when killed (what the store writer alone had committed: the loss
without the inbound journal), stored after the restart, lost, and how long the start-up replay took.
``--journal-mb 0`` runs the same rounds with the journal off.

    .venv/bin/python bench/durability.py [--rounds 3] [--messages 3000] [--groups 50] [--rate 0]
                                         [--read-wait 1.0] [--journal-mb 256]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.faults.kill_flood import flood_kill_restart  # noqa: E402


async def main(args: argparse.Namespace) -> None:
    config = (ROOT / "config" / "greywind.toml").read_text(encoding="utf-8")
    config = config.replace("journal_mb = 256 ", f"journal_mb = {args.journal_mb} ")
    rate = args.rate or None
    print(
        f"{args.messages} messages over {args.groups} groups at {args.rate or 'max'} msg/s, "
        f"kill -9 {args.read_wait} s after the last, journal_mb = {args.journal_mb}"
    )
    print(f"{'round':>5} {'sent/s':>8} {'sent':>6} {'at kill':>8} {'restart':>8} {'lost':>5} {'replay s':>9}")
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="greywind-durability-") as tmp:
            run = await flood_kill_restart(
                Path(tmp),
                count=args.messages,
                groups=args.groups,
                read_wait=args.read_wait,
                rate=rate,
                config=config,
            )
        sent_rate = len(run.sent) / max(run.send_seconds, 1e-9)
        print(
            f"{n + 1:>5} {sent_rate:>8.0f} {len(run.sent):>6} {len(run.sent) - run.lost_at_kill:>8} "
            f"{len(run.sent) - run.lost:>8} {run.lost:>5} {run.replay_seconds:>9.2f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=3_000)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--read-wait", type=float, default=1.0)
    parser.add_argument("--journal-mb", type=int, default=256)
    asyncio.run(main(parser.parse_args()))
