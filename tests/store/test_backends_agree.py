"""Each registered backend finds the same messages as the in-memory one for the same queries (random
corpus)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from runtime.config.store import StoreConfig
from runtime.store.backends import open_store, registered_backends
from runtime.store.memory import MemoryStore
from runtime.store.records import StoredMessage
from tests.conftest import backend_ready

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


# The in-memory backend is the reference the others are held to.
OTHERS = [name for name in registered_backends() if name != "memory"]


@pytest.mark.parametrize("backend", OTHERS)
async def test_each_backend_searches_like_the_memory_one(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    backend_ready(request, backend)
    rng = random.Random(20260311)
    chats = ["group:1", "group:2", "private:7"]
    messages = [
        StoredMessage(rng.choice(chats), str(i), "u", "A", float(i), sentence(rng)) for i in range(400)
    ]
    queries = [sentence(rng) for _ in range(80)] + [w for w in WORDS if w.strip("。！，?🙂")]
    memory, other = MemoryStore(), await open_store(StoreConfig(backend=backend), tmp_path)
    try:
        await memory.append_messages(messages)
        await other.append_messages(messages)
        for query in queries:
            scope = rng.sample(chats, rng.randint(1, 3))
            a = await memory.search_messages(query, chat_ids=scope, limit=1000)
            b = await other.search_messages(query, chat_ids=scope, limit=1000)
            got_a = {(h.message.chat_id, h.message.message_id) for h in a}
            got_b = {(h.message.chat_id, h.message.message_id) for h in b}
            assert got_a == got_b, query
            assert all(chat in scope for chat, _ in got_a)
    finally:
        await memory.close()
        await other.close()
