"""``python -m runtime.store migrate``: a real SQLite file copied into the real (throwaway) server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runtime.store.__main__ import main
from runtime.store.postgres import PostgresStore
from runtime.store.protocol import Store
from runtime.store.records import (
    EpisodeRecord,
    EpisodeStep,
    EventRecord,
    LexiconTermRecord,
    Memory,
    ScheduledActivation,
    ScopeType,
    SpeechRecord,
    StoredMessage,
    TopicLink,
    TopicThread,
)
from runtime.store.sqlite import DB_FILENAME, SqliteStore

G1, G2 = "qq:10001:group:1", "qq:10001:group:2"
TEXTS = [
    "用Python写爬虫",
    "我们研究生命起源",
    "灰风架构设计今天定稿",
    "今晚开黑打原神吗",
    "老张刚换了iPhone15",
]
QUERIES = ["python", "爬虫", "生命", "灰风的设计", "原神", "iphone", "15", "定稿", "量子"]


async def fill(store: Store) -> None:
    await store.append_messages(
        [
            StoredMessage(
                G1 if i % 2 else G2, str(i), f"u{i % 3}", "阿青", float(i), f"{TEXTS[i % 5]} 第{i}条"
            )
            for i in range(300)
        ]
    )
    await store.write([TopicLink(G1, ("1", "3"), "topic-1")])
    await store.save_event(
        EventRecord(
            id="e1",
            kind="message",
            chat_id=G1,
            thread_id="th",
            actor_ids=("u1",),
            evidence_message_ids=("1",),
            created_at=1.0,
            updated_at=2.0,
            not_before=3.0,
            deadline=None,
            priority=0.5,
            state="scheduled",
            payload={"k": "值"},
        )
    )
    await store.save_activation(ScheduledActivation("e1", G1, 3.0, None, 0.5, 1.0))
    await store.append_speech(SpeechRecord(G1, 5.0, True))
    await store.save_lexicon_terms([LexiconTermRecord("group", G1, "灰风", 1.0, pinned=True, hits=3)])
    await store.upsert_topic_thread(
        TopicThread("topic-1", "设计", "discussion", "", created_at=1.0, updated_at=2.0, chat_ids=(G1,))
    )
    await store.upsert_memory(
        Memory(
            id="m1",
            scope_type=ScopeType.CHAT,
            scope_id=G1,
            memory_type="fact",
            content="阿青最喜欢青色",
            importance=0.8,
            created_at=1.0,
            embedding=b"\x00\x01\x02\x03",
            embedding_model="e1",
        )
    )
    await store.add_token_usage(G1, "2026-12-01", prompt_tokens=100, completion_tokens=20)
    await store.save_episode(
        EpisodeRecord(
            id="ep1",
            chat_id=G1,
            started_at=1.0,
            state="done",
            event_id="e1",
            ended_at=2.0,
            outcome="replied",
            steps=(EpisodeStep("ep1", 0, "model", 1.5, {"a": 1}),),
        )
    )


def test_an_sqlite_database_moves_over_whole_and_searches_alike(
    tmp_path: Path, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / DB_FILENAME

    async def make() -> None:
        store = await SqliteStore.open(path)
        try:
            await fill(store)
        finally:
            await store.close()

    asyncio.run(make())
    assert main(["migrate", "--from", f"sqlite:{path}", "--to", "postgresql"]) == 0
    out = capsys.readouterr().out
    assert "row counts match" in out

    async def compare() -> None:
        sqlite = await SqliteStore.open(path)
        postgres = await PostgresStore.open(postgres_dsn)
        try:
            own = ("leases", "schema_version")  # each backend's own bookkeeping
            counts = {k: v for k, v in (await sqlite.table_counts()).items() if k not in own}
            assert counts == {k: v for k, v in (await postgres.table_counts()).items() if k not in own}
            assert counts["messages"] == 300
            assert await postgres.count_messages() == 300
            for query in QUERIES:
                for chats in ([G1], [G1, G2]):
                    a = await sqlite.search_messages(query, chat_ids=chats, limit=500)
                    b = await postgres.search_messages(query, chat_ids=chats, limit=500)
                    assert {h.message.message_id for h in a} == {h.message.message_id for h in b}, query
            assert await postgres.list_messages(G1) == await sqlite.list_messages(G1)
            assert [m.message_id for m in await postgres.topic_messages("topic-1")] == ["1", "3"]
            assert await postgres.get_memory("m1") == await sqlite.get_memory("m1")
            assert [
                h.memory.id for h in await postgres.search_memories("青色", scopes=[(ScopeType.CHAT, G1)])
            ] == ["m1"]
            assert await postgres.get_episode("ep1") == await sqlite.get_episode("ep1")
            assert (await postgres.get_token_usage(G1, "2026-12-01")).prompt_tokens == 100
            state = await postgres.load_runtime_state(now=10.0)
            assert [e.id for e in state.events] == ["e1"]
            # New rows after the copy take fresh keys: the copied seq values are not reused.
            await postgres.append_messages(
                [StoredMessage(G1, "new", "u9", "新人", 400.0, "迁移以后的第一条")]
            )
            assert await postgres.count_messages() == 301
            assert [h.message.message_id for h in await postgres.search_messages("迁移", chat_ids=[G1])] == [
                "new"
            ]
        finally:
            await sqlite.close()
            await postgres.close()

    asyncio.run(compare())

    # A second copy into the now non-empty database is refused, and changes nothing.
    assert main(["migrate", "--from", f"sqlite:{path}", "--to", "postgresql"]) == 1
    assert "already holds rows" in capsys.readouterr().err


def test_bad_arguments_are_refused_with_the_reason(
    tmp_path: Path, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["migrate", "--from", f"mysql:{tmp_path}", "--to", "postgresql"]) == 2
    assert "--from takes sqlite:PATH" in capsys.readouterr().err
    assert main(["migrate", "--from", f"sqlite:{tmp_path / 'nothing.sqlite3'}", "--to", "postgresql"]) == 1
    assert "no database at" in capsys.readouterr().err
    assert not (tmp_path / "nothing.sqlite3").exists()
