"""The process ``test_kill.py`` kills: writes messages through the writer until it is SIGKILLed.

Usage: ``python -m tests.store.kill_child DB_PATH FLUSH_INTERVAL_MS`` (SQLite), or ``postgresql`` for
DB_PATH: the PostgreSQL database ``$GREYWIND_PG_DSN`` names. Message ``i`` has id ``str(i)``
and ``time`` = the wall clock when it was queued. Prints ``committed N`` whenever the writer's count
of committed items grows (items 0..N-1 are then durable).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from runtime.store.protocol import Store
from runtime.store.records import StoredMessage
from runtime.store.sqlite import SqliteStore
from runtime.store.writer import StoreWriter


async def open_target(path: str, account: str = "10001") -> Store:
    """The store at ``path``; on PostgreSQL leased for ``account`` (the killed child's lease outlives
    it by a TTL, so the test reads back under another account's)."""
    if path == "postgresql":
        from runtime.store.postgres import PostgresStore

        return await PostgresStore.open(os.environ["GREYWIND_PG_DSN"], accounts=[account])
    return await SqliteStore.open(path)


async def main(path: str, interval_ms: int) -> None:
    store = await open_target(path)
    reported = 0
    async with StoreWriter(store, flush_interval=interval_ms / 1000) as writer:
        print("ready", flush=True)
        i = 0
        while True:
            await writer.put(StoredMessage("group:1", str(i), "u1", "Alice", time.time(), f"第{i}条消息"))
            i += 1
            written = writer.statistics().written
            if written != reported:
                reported = written
                print(f"committed {written}", flush=True)
            await asyncio.sleep(0.002)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
