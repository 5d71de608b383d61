"""The in-memory and SQLite backends find the same messages for the same queries (random corpus)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from runtime.store.memory import MemoryStore
from runtime.store.records import StoredMessage
from runtime.store.sqlite import SqliteStore

pytestmark = pytest.mark.asyncio

WORDS = [
    "灰风",
    "架构",
    "设计",
    "原神",
    "开黑",
    "爬虫",
    "python",
    "写",
    "猫",
    "狗",
    "今天",
    "明天",
    "吃饭",
    "视频",
    "研究生",
    "生命",
    "起源",
    "的",
    "了",
    "吗",
    "bug",
    "qq",
    "666",
    "Steam",
    "哈哈",
    "下班",
    "周末",
    "爬山",
    "机器人",
    "人工智能",
    "智能",
    "会议",
    "文档",
    "版本",
    "v2",
    "。",
    "！",
    "，",
    "?",
    "🙂",
]


def sentence(rng: random.Random) -> str:
    parts = rng.choices(WORDS, k=rng.randint(1, 9))
    glue = "" if rng.random() < 0.6 else " "
    return glue.join(parts)


async def test_memory_and_sqlite_search_alike(tmp_path: Path) -> None:
    rng = random.Random(20260311)
    chats = ["group:1", "group:2", "private:7"]
    messages = [
        StoredMessage(rng.choice(chats), str(i), "u", "A", float(i), sentence(rng)) for i in range(400)
    ]
    queries = [sentence(rng) for _ in range(80)] + [w for w in WORDS if w.strip("。！，?🙂")]
    memory, sqlite = MemoryStore(), await SqliteStore.open(tmp_path / "greywind.sqlite3")
    try:
        await memory.append_messages(messages)
        await sqlite.append_messages(messages)
        for query in queries:
            scope = rng.sample(chats, rng.randint(1, 3))
            a = await memory.search_messages(query, chat_ids=scope, limit=1000)
            b = await sqlite.search_messages(query, chat_ids=scope, limit=1000)
            got_a = {(h.message.chat_id, h.message.message_id) for h in a}
            got_b = {(h.message.chat_id, h.message.message_id) for h in b}
            assert got_a == got_b, query
            assert all(chat in scope for chat, _ in got_a)
    finally:
        await memory.close()
        await sqlite.close()
