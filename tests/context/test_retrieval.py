"""RetrievalEngine: limits, scopes (nothing crosses chats), sources, recall on Chinese, embeddings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from runtime.context.retrieval import RetrievalEngine, RetrievalQuery, RetrievalSettings, memory_scopes
from runtime.kernel.message import SENT_ELSEWHERE_LABEL
from runtime.store.protocol import Store
from runtime.store.records import Memory, ScopeType, StoredMessage, Task, TaskStatus

G1, G2 = "group:1", "group:2"


def memory(mid: str, scope: ScopeType, scope_id: str, content: str, importance: float = 0.5) -> Memory:
    return Memory(mid, scope, scope_id, "fact", content, importance, created_at=1.0, updated_at=1.0)


async def seed(store: Store) -> None:
    for m in (
        memory("g1-hotpot", ScopeType.CHAT, G1, "一群的人周五晚上约了火锅"),
        memory("g2-hotpot", ScopeType.CHAT, G2, "二群的秘密：火锅店老板是群主的表哥", importance=1.0),
        memory("identity", ScopeType.IDENTITY, "", "灰风不吃火锅，但喜欢听大家聊火锅"),
        memory("thread-vec", ScopeType.THREAD, "topic-arch", "向量数据库先不上，SQLite 够用", importance=0.9),
        memory("cat", ScopeType.CHAT, G1, "甲家的猫叫年糕"),
        memory("crawler", ScopeType.CHAT, G1, "乙在用Python写爬虫抓天气数据"),
        memory("user-secret", ScopeType.USER, "u1", "u1 私下说过火锅吃多了胃疼"),
    ):
        await store.upsert_memory(m)


def engine(store: Store, **kw: object) -> RetrievalEngine:
    return RetrievalEngine(store, settings=RetrievalSettings(**kw))  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_chat_memories_never_cross_chats_identity_memories_do(store: Store) -> None:
    await seed(store)
    in_g1 = await engine(store).retrieve(RetrievalQuery(G1, "火锅"))
    ids = {r.source_id for r in in_g1}
    assert {"g1-hotpot", "identity"} <= ids
    assert "g2-hotpot" not in ids
    assert "user-secret" not in ids
    in_g2 = {r.source_id for r in await engine(store).retrieve(RetrievalQuery(G2, "火锅"))}
    assert "g1-hotpot" not in in_g2
    assert {"g2-hotpot", "identity"} <= in_g2


@pytest.mark.asyncio
async def test_user_memories_only_in_that_users_private_chat(store: Store) -> None:
    await seed(store)
    private = {
        r.source_id
        for r in await engine(store).retrieve(RetrievalQuery("private:u1", "火锅", sender_id="u1"))
    }
    assert "user-secret" in private
    in_group = {r.source_id for r in await engine(store).retrieve(RetrievalQuery(G1, "火锅", sender_id="u1"))}
    assert "user-secret" not in in_group
    other_private = await engine(store).retrieve(RetrievalQuery("private:u2", "火锅", sender_id="u2"))
    assert "user-secret" not in {r.source_id for r in other_private}
    assert memory_scopes("private:u1", topic_thread_id=None, sender_id="u2")[-1] == (
        ScopeType.CHAT,
        "private:u1",
    )


@pytest.mark.asyncio
async def test_thread_memories_only_in_their_thread(store: Store) -> None:
    await seed(store)
    q = "向量数据库要不要上"
    with_thread = await engine(store).retrieve(RetrievalQuery(G1, q, topic_thread_id="topic-arch"))
    assert with_thread[0].source_id == "thread-vec"
    assert with_thread[0].relevance_reason.startswith("本线程")
    other = await engine(store).retrieve(RetrievalQuery(G1, q, topic_thread_id="topic-other"))
    assert "thread-vec" not in {r.source_id for r in other}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("猫", "cat"),  # one character
        ("火锅", "g1-hotpot"),  # two
        ("向量数据库", "thread-vec"),  # three and more
        ("python", "crawler"),  # ASCII glued to CJK in the memory
        ("爬虫", "crawler"),
        ("用Python写爬虫", "crawler"),
        ("年糕最近怎么样了", "cat"),  # a sentence sharing one word
        ("周五的火锅几点开始啊", "g1-hotpot"),
    ],
)
@pytest.mark.asyncio
async def test_recall_on_chinese_queries(store: Store, query: str, expected: str) -> None:
    await seed(store)
    found = await engine(store).retrieve(RetrievalQuery(G1, query, topic_thread_id="topic-arch"))
    assert expected in {r.source_id for r in found}


@pytest.mark.asyncio
async def test_never_more_than_max_items_and_never_padded(store: Store) -> None:
    for i in range(30):
        await store.upsert_memory(memory(f"m{i}", ScopeType.CHAT, G1, f"第{i}次聊到火锅"))
    assert len(await engine(store, max_items=3).retrieve(RetrievalQuery(G1, "火锅"))) == 3
    assert len(await engine(store).retrieve(RetrievalQuery(G1, "火锅"))) == 5
    assert await engine(store).retrieve(RetrievalQuery(G1, "量子力学")) == ()
    for bad in (1, 6):
        with pytest.raises(ValueError, match=r"2\.\.5"):
            RetrievalSettings(max_items=bad)


@pytest.mark.asyncio
async def test_items_carry_source_reason_content_and_confidence_best_first(store: Store) -> None:
    await seed(store)
    found = await engine(store).retrieve(RetrievalQuery(G1, "周五火锅"))
    assert found[0].source_id == "g1-hotpot"  # covers both words
    assert all(0.0 < r.confidence <= 1.0 for r in found)
    assert [r.confidence for r in found] == sorted((r.confidence for r in found), reverse=True)
    assert "火锅" in found[0].relevance_reason
    assert found[0].content == "一群的人周五晚上约了火锅"


@pytest.mark.asyncio
async def test_messages_are_searched_in_this_chat_only_and_dialogue_is_not_repeated(
    store: Store,
) -> None:
    await store.append_messages(
        [
            StoredMessage(G1, "a", "u1", "甲", 1.0, "周末去爬山吗", topic_thread_id="topic-1"),
            StoredMessage(G1, "b", "u2", "乙", 2.0, "爬山要带登山杖"),
            StoredMessage(G2, "c", "u3", "丙", 3.0, "爬山的秘密路线只告诉二群"),
        ]
    )
    found = await engine(store).retrieve(
        RetrievalQuery(G1, "爬山", topic_thread_id="topic-1", exclude_message_ids=frozenset({"b"}))
    )
    assert [r.source_id for r in found] == ["group:1/a"]
    assert found[0].source_type == "message"
    assert found[0].relevance_reason.startswith("本线程")


@pytest.mark.asyncio
async def test_the_bots_own_messages_are_labelled_with_the_personas_name(store: Store) -> None:
    await store.append_messages([StoredMessage(G1, "m", "self", "self", 1.0, "我推荐去香山", from_self=True)])
    found = await engine(store, self_name="小岚").retrieve(RetrievalQuery(G1, "香山"))
    assert [r.content for r in found] == ["小岚自己: 我推荐去香山"]


@pytest.mark.asyncio
async def test_what_the_account_sent_elsewhere_is_not_labelled_as_the_personas_own(store: Store) -> None:
    typed = StoredMessage(G1, "m", "10000", "小岚", 1.0, "我推荐去香山", from_self=True, sent_elsewhere=True)
    await store.append_messages([typed])
    found = await engine(store, self_name="小岚").retrieve(RetrievalQuery(G1, "香山"))
    assert [r.content for r in found] == [f"{SENT_ELSEWHERE_LABEL} 小岚: 我推荐去香山"]


@pytest.mark.asyncio
async def test_task_conclusions_are_retrievable(store: Store) -> None:
    await store.upsert_task(
        Task(
            "task-1",
            "topic-arch",
            "选存储",
            TaskStatus.DONE,
            1.0,
            2.0,
            conclusion="用 SQLite，FTS5 配 jieba 分词",
        )
    )
    await store.upsert_task(
        Task("task-2", "topic-other", "选存储", TaskStatus.DONE, 1.0, 2.0, conclusion="别的线程")
    )
    found = await engine(store).retrieve(RetrievalQuery(G1, "存储用什么", topic_thread_id="topic-arch"))
    assert [(r.source_type, r.source_id) for r in found] == [("task", "task-1")]
    assert "SQLite" in found[0].content


@pytest.mark.asyncio
async def test_structured_filters(store: Store) -> None:
    await store.upsert_memory(
        Memory("d1", ScopeType.CHAT, G1, "decision", "周会改到周三", 0.9, 10.0, tags=("meeting",))
    )
    await store.upsert_memory(Memory("d2", ScopeType.CHAT, G1, "fact", "周会的会议室在三楼", 0.9, 10.0))
    await store.upsert_memory(
        Memory("d3", ScopeType.CHAT, G2, "decision", "二群的决定", 0.9, 10.0, tags=("meeting",))
    )
    found = await engine(store).retrieve(
        RetrievalQuery(G1, "天气", memory_types=("decision",), tags=("meeting",))
    )
    assert [r.source_id for r in found] == ["d1"]


class FakeEmbedder:
    """Vectors by topic: texts about food point one way, about code another."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    async def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        if self.fail:
            raise RuntimeError("embeddings endpoint down")
        return [[1.0, 0.1, 0.0] if ("吃" in t or "饭" in t) else [0.0, 0.1, 1.0] for t in texts]


@pytest.mark.asyncio
async def test_embeddings_find_what_shares_no_words(store: Store) -> None:
    await store.upsert_memory(memory("food", ScopeType.CHAT, G1, "楼下新开了一家川菜馆"))
    await store.upsert_memory(memory("other-chat", ScopeType.CHAT, G2, "二群楼下的川菜馆"))
    await store.save_memory_vector("food", np.asarray([0.9, 0.0, 0.1], dtype="<f4").tobytes())
    await store.save_memory_vector("other-chat", np.asarray([1.0, 0.0, 0.0], dtype="<f4").tobytes())
    eng = RetrievalEngine(store, embedder=FakeEmbedder())
    found = await eng.retrieve(RetrievalQuery(G1, "晚饭去哪吃"))
    assert [r.source_id for r in found] == ["food"]
    assert found[0].relevance_reason.startswith("语义相近")
    failing = RetrievalEngine(store, embedder=FakeEmbedder(fail=True))
    assert await failing.retrieve(RetrievalQuery(G1, "晚饭去哪吃")) == ()
    assert failing.statistics().embed_failures == 1


@pytest.mark.asyncio
async def test_vectors_attached_later_are_picked_up(store: Store) -> None:
    await store.upsert_memory(memory("food", ScopeType.CHAT, G1, "楼下新开了一家川菜馆"))
    eng = RetrievalEngine(
        store, settings=RetrievalSettings(vector_cache_seconds=0.0), embedder=FakeEmbedder()
    )
    assert await eng.retrieve(RetrievalQuery(G1, "晚饭去哪吃")) == ()
    await store.save_memory_vector("food", np.asarray([0.9, 0.0, 0.1], dtype="<f4").tobytes())
    assert [r.source_id for r in await eng.retrieve(RetrievalQuery(G1, "晚饭去哪吃"))] == ["food"]
