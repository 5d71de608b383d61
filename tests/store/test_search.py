"""Full-text search over Chinese: 1-, 2- and 3+-character words and CJK glued to ASCII, on every backend."""

from __future__ import annotations

import pytest

from runtime.store.protocol import Store
from runtime.store.records import Memory, ScopeType, StoredMessage

pytestmark = pytest.mark.asyncio

G1 = "group:1"

CORPUS = {
    "py": "用Python写爬虫",
    "life": "我们研究生命起源",
    "arch": "灰风架构设计今天定稿",
    "video": "陪我看视频吧！",
    "cat": "猫",
    "game": "今晚开黑打原神吗",
    "ver": "升级到python3.11以后快多了",
    "en": "Deploy the NoneBot adapter tonight",
    "phone": "老张刚换了iPhone15",
}

CASES = [
    # query, the messages it must find (and no others)
    ("python", {"py", "ver"}),  # letters glued to digits: "python3.11" holds the word "python"
    ("Python", {"py", "ver"}),
    ("PYTHON", {"py", "ver"}),
    ("iphone", {"phone"}),
    ("15", {"phone"}),
    ("爬虫", {"py"}),
    ("写", {"py"}),
    ("爬", {"py"}),  # one character of a longer word
    ("用Python写爬虫", {"py"}),
    ("python写爬虫", {"py"}),
    ("猫", {"cat"}),  # a one-character message
    ("生命", {"life"}),  # jieba may cut 研究生/命: the character phrase still finds it
    ("生命起源", {"life"}),
    ("灰风", {"arch"}),
    ("架构", {"arch"}),
    ("灰风架构设计", {"arch"}),
    ("灰风的设计", {"arch"}),  # function words are dropped from queries
    ("视频", {"video"}),
    ("看视频", {"video"}),
    ("原神", {"game"}),
    ("开黑", {"game"}),
    ("python3.11", {"ver"}),
    ("nonebot", {"en"}),
    ("adapter", {"en"}),
    ("java", set()),
    ("量子", set()),
]


@pytest.fixture
def corpus() -> list[StoredMessage]:
    return [
        StoredMessage(G1, key, "u1", "Alice", float(i), text) for i, (key, text) in enumerate(CORPUS.items())
    ]


@pytest.mark.parametrize(("query", "expected"), CASES, ids=[c[0] for c in CASES])
async def test_message_search(
    store: Store, corpus: list[StoredMessage], query: str, expected: set[str]
) -> None:
    await store.append_messages(corpus)
    hits = await store.search_messages(query, chat_ids=[G1], limit=20)
    assert {h.message.message_id for h in hits} == expected


@pytest.mark.parametrize(("query", "expected"), CASES[:12], ids=[c[0] for c in CASES[:12]])
async def test_memory_search(store: Store, query: str, expected: set[str]) -> None:
    for key, text in CORPUS.items():
        await store.upsert_memory(Memory(key, ScopeType.CHAT, G1, "fact", text, 0.5, 1.0))
    hits = await store.search_memories(query, scopes=[(ScopeType.CHAT, G1)], limit=20)
    assert {h.memory.id for h in hits} == expected


async def test_queries_with_only_punctuation_find_nothing(store: Store, corpus: list[StoredMessage]) -> None:
    await store.append_messages(corpus)
    for query in ("", "   ", "！？", '"', "*", "AND", "NEAR("):
        hits = await store.search_messages(query, chat_ids=[G1])
        assert all(query.strip().lower() in h.message.text.lower() for h in hits), query


async def test_fts_syntax_in_queries_is_taken_literally(store: Store) -> None:
    await store.append_messages(
        [
            StoredMessage(G1, "1", "u", "A", 1.0, 'he said "OR" and NOT much'),
            StoredMessage(G1, "2", "u", "A", 2.0, "完全无关"),
        ]
    )
    hits = await store.search_messages('"OR" NOT', chat_ids=[G1])
    assert [h.message.message_id for h in hits] == ["1"]


async def test_a_huge_message_is_stored_whole_and_indexed_up_to_the_cap(store: Store) -> None:
    text = "开头有个关键词灰风" + "哈" * 200_000 + "结尾的秘密"
    await store.append_messages([StoredMessage(G1, "big", "u1", "Alice", 1.0, text)])
    assert (await store.get_message(G1, "big")).text == text  # type: ignore[union-attr]
    assert [h.message.message_id for h in await store.search_messages("灰风", chat_ids=[G1])] == ["big"]
    assert await store.search_messages("秘密", chat_ids=[G1]) == []
