"""A windowed message search (``newest``) does work for the window, not for the chat's whole history.

Retrieval searches the chat's messages for the turn's rarest word on the way to every @. Ranked over
every match, a common word in a long history cost what its matches cost: 45 ms an @ for a word with
8,000 matches in a chat of 100,000 messages (bm25 scored each, and counted the chat token's 100,000
rows for its weight). The SQLite work of one search is counted here in virtual-machine steps (a
progress handler), so the test says whether it grows with the older matches, whatever the machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.store.records import StoredMessage
from runtime.store.sqlite import DB_FILENAME, SqliteStore
from runtime.store.sqlite.store import message_search_sql
from runtime.store.text import parse_query
from tests.support.sqlite_work import vm_steps

pytestmark = pytest.mark.asyncio

CHAT, OTHER = "group:1", "group:2"


def _messages(chat: str, first: int, count: int) -> list[StoredMessage]:
    return [
        StoredMessage(chat, f"{chat}-{n}", "u1", "Alice", float(n), f"周末一起打游戏吧 第{n}次")
        for n in range(first, first + count)
    ]


def _search_steps(path: Path, newest: int | None) -> tuple[int, list[str]]:
    """VM steps (in hundreds) of the store's search for 游戏 in CHAT, and the ids it finds."""
    sql, params = message_search_sql(parse_query("游戏"), chat_ids=[CHAT], limit=6, newest=newest)
    steps, rows = vm_steps(path, sql, params)
    return steps, [str(row[1]) for row in rows]


async def test_a_windowed_search_does_not_grow_with_the_older_matches(tmp_path: Path) -> None:
    path = tmp_path / DB_FILENAME
    store = await SqliteStore.open(path)
    try:
        await store.append_messages(_messages(CHAT, 0, 500) + _messages(OTHER, 0, 500))
        short_history, _ = _search_steps(path, 50)
        whole_short, _ = _search_steps(path, None)
        await store.append_messages(_messages(CHAT, 500, 2_500) + _messages(OTHER, 500, 2_500))
        long_history, found = _search_steps(path, 50)
        whole_long, _ = _search_steps(path, None)
        hits = await store.search_messages("游戏", chat_ids=[CHAT], limit=6, newest=50)
    finally:
        await store.close()

    assert [h.message.message_id for h in hits] == found
    assert all(int(mid.rsplit("-", 1)[1]) >= 2_950 for mid in found), found  # from the newest 50
    # Ranked over every match, six times the matches cost about six times the work...
    assert whole_long > 4 * whole_short, (whole_short, whole_long)
    # ...and over the newest 50, about the same.
    assert long_history <= short_history * 1.5 + 5, (short_history, long_history)
