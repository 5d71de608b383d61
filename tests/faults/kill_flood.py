"""A flood, a ``kill -9``, a restart: what reached SQLite of what a OneBot peer sent.

Shared by ``tests/faults/test_durability.py`` and ``bench/durability.py``. The real ``bot.py`` (shadow
mode: no model) is flooded by a :class:`~tests.e2e.onebot_peer.OneBotPeer` over its WebSocket, as fast
as the peer can send, across many groups: faster than the bot ingests. Once the last frame is sent
and the bot has had ``read_wait`` seconds to read what is in its socket, it is killed with SIGKILL.
The database is read as the kill left it; then the bot is started again on the same data directory,
stopped cleanly once it has settled, and the database read again. Every read is of the real file,
with ``sqlite3``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.bot_process import BotProcess
from tests.e2e.live import connected_peer
from tests.support import onebot_events as ob

__all__ = ["KillRun", "flood_kill_restart", "stored_rows"]

SELF_ID = 10_000
FIRST_GROUP = 710_000
_ids = itertools.count(3_000_000)


@dataclass(frozen=True)
class KillRun:
    sent: set[tuple[str, str]]  # (chat_id, message_id)
    send_seconds: float
    after_kill: list[tuple[str, str]]  # rows in the database right after the kill
    after_restart: list[tuple[str, str]]  # rows once the restarted bot has stopped
    replayed: dict[str, Any]  # the restarted bot's journal_replayed log record ({} if none)
    replay_seconds: float  # from the journal opened to the replay handed over (0 if none)
    restarted_exit: int

    @property
    def lost_at_kill(self) -> int:
        return len(self.sent - set(self.after_kill))

    @property
    def lost(self) -> int:
        return len(self.sent - set(self.after_restart))


def stored_rows(data_dir: Path) -> list[tuple[str, str]]:
    path = data_dir / "greywind.sqlite3"
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [(str(c), str(m)) for c, m in db.execute("SELECT chat_id, message_id FROM messages")]


async def _flood(
    bot: BotProcess, count: int, groups: int, read_wait: float, rate: float | None
) -> tuple[set[tuple[str, str]], float]:
    sent: set[tuple[str, str]] = set()
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        started = time.monotonic()
        for n in range(count):
            if rate is not None and (ahead := started + n / rate - time.monotonic()) > 0:
                await asyncio.sleep(ahead)
            group = FIRST_GROUP + n % groups
            message_id = next(_ids)
            event = ob.group_message(
                self_id=SELF_ID,
                group_id=group,
                user_id=20_000 + n % 97,
                message_id=message_id,
                message=[ob.text(f"第{n}条：今天的天气不错，适合出去走走")],
            )
            await peer.post_raw(json.dumps(event, ensure_ascii=False))
            sent.add((f"qq:{SELF_ID}:group:{group}", str(message_id)))
        seconds = time.monotonic() - started
        await asyncio.sleep(read_wait)  # the bot reads what is in its socket
        bot.kill()  # SIGKILL
    return sent, seconds


async def flood_kill_restart(
    workdir: Path,
    *,
    count: int,
    groups: int = 50,
    read_wait: float = 1.0,
    rate: float | None = None,  # messages per second; None: as fast as the peer can send
    config: str | None = None,
) -> KillRun:
    data_dir = workdir / "data"
    first = BotProcess(workdir / "run0", data_dir=data_dir, config=config).start()
    try:
        sent, seconds = await _flood(first, count, groups, read_wait, rate)
    finally:
        first.kill()
    after_kill = stored_rows(data_dir)
    second = BotProcess(workdir / "run1", data_dir=data_dir, config=config, start_timeout=60).start()
    try:
        records = second.records()
        replayed = [r for r in records if r.get("event") == "journal_replayed"]
        opened = [r for r in records if r.get("event") == "journal_opened"]
        # Settled: the replayed messages went through the runtime; a clean stop flushes the writer.
        await asyncio.sleep(0.5)
    finally:
        code = second.stop(timeout=30)
    return KillRun(
        sent=sent,
        send_seconds=seconds,
        after_kill=after_kill,
        after_restart=stored_rows(data_dir),
        replayed=replayed[0] if replayed else {},
        replay_seconds=_seconds(opened[0], replayed[0]) if opened and replayed else 0.0,
        restarted_exit=code,
    )


def _seconds(first: dict[str, Any], second: dict[str, Any]) -> float:
    from datetime import datetime

    def at(record: dict[str, Any]) -> float:
        return datetime.fromisoformat(str(record["timestamp"]).replace("Z", "+00:00")).timestamp()

    return at(second) - at(first)
