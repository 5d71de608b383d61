"""ThreadResolver: binding, conversation, continuation, lexical, new — and design/000 §7.5's errors."""

from __future__ import annotations

import pytest

from runtime.context.errors import UnknownTopicThreadError
from runtime.context.resolver import CASUAL, ResolverSettings, ResolveRule, ThreadResolver
from runtime.context.tasks import TaskBook
from runtime.store.protocol import Store
from runtime.store.records import StoredMessage, TopicLink

G1, G2 = "group:1", "group:2"


def resolver(store: Store) -> ThreadResolver:
    return ThreadResolver(store, settings=ResolverSettings(thread_continuation=900.0, names=("灰风",)))


async def said(store: Store, chat: str, mid: str, text: str, now: float, thread: str) -> None:
    await store.append_messages(
        [
            StoredMessage(
                chat_id=chat,
                message_id=mid,
                sender_id="u1",
                sender_name="甲",
                time=now,
                text=text,
                thread_id=thread,
            )
        ]
    )


@pytest.mark.asyncio
async def test_a_bound_chat_uses_its_thread(store: Store) -> None:
    r = resolver(store)
    watch = await r.create(G1, "陪我看视频", now=0.0, thread_type="companion", tags=("视频",))
    await r.create(G1, "灰风系统架构设计", now=1.0, tags=("架构",))
    await r.bind(G1, watch.id, now=2.0)
    res = await r.resolve(G1, "这个架构的片段拍得真好看", now=10.0)
    assert (res.thread.id, res.rule) == (watch.id, ResolveRule.BINDING)


@pytest.mark.asyncio
async def test_a_binding_holds_only_in_its_chat(store: Store) -> None:
    r = resolver(store)
    watch = await r.create(G1, "陪我看视频", now=0.0, bind=True)
    res = await r.resolve(G2, "陪我看视频吧，今天看纪录片", now=5.0)
    assert res.thread.id != watch.id
    assert res.rule is ResolveRule.NEW
    assert res.thread.chat_ids == (G2,)


@pytest.mark.asyncio
async def test_an_input_in_a_linked_conversation_stays_in_its_thread(store: Store) -> None:
    r = resolver(store)
    await said(store, G1, "m1", "我们来设计一下灰风的上下文运行时", 0.0, "th-1")
    first = await r.resolve(
        G1, "我们来设计一下灰风的上下文运行时", now=0.0, conversation_thread_id="th-1", message_id="m1"
    )
    res = await r.resolve(G1, "那 session 的状态机要几种状态", now=60.0, conversation_thread_id="th-1")
    assert (res.thread.id, res.rule) == (first.thread.id, ResolveRule.CONVERSATION)
    stored = await store.get_message(G1, "m1")
    assert stored is not None
    assert stored.topic_thread_id == first.thread.id
    # After a restart the link comes from the stored messages.
    again = await resolver(store).resolve(
        G1, "那 session 的状态机要几种状态", now=70.0, conversation_thread_id="th-1"
    )
    assert (again.thread.id, again.rule) == (first.thread.id, ResolveRule.CONVERSATION)


@pytest.mark.asyncio
async def test_links_can_be_queued_behind_the_messages(store: Store) -> None:
    queued: list[TopicLink] = []
    r = ThreadResolver(store, settings=ResolverSettings(names=("灰风",)), link=queued.append)
    first = await r.resolve(
        G1, "我们来设计一下灰风的上下文运行时", now=0.0, conversation_thread_id="th-1", message_id="m1"
    )
    assert queued == [TopicLink(G1, ("m1",), first.thread.id)]
    # Not flushed yet, and still the conversation is known to belong to the thread.
    res = await r.resolve(G1, "那 session 的状态机要几种状态", now=60.0, conversation_thread_id="th-1")
    assert (res.thread.id, res.rule) == (first.thread.id, ResolveRule.CONVERSATION)


@pytest.mark.asyncio
async def test_continue_after_a_restart_finds_the_last_work_thread_not_a_default(store: Store) -> None:
    arch = await resolver(store).create(G1, "灰风系统架构设计", now=0.0, tags=("architecture",))
    await resolver(store).resolve(G1, "今天先把 architecture 的 v2 文档写完", now=100.0)
    # A new resolver over the same store: the process restarted, hours later.
    res = await resolver(store).resolve(G1, "继续", now=100.0 + 8 * 3600)
    assert (res.thread.id, res.rule) == (arch.id, ResolveRule.CONTINUATION)
    assert res.created is False


@pytest.mark.asyncio
async def test_recent_thread_continues_when_the_input_shares_its_words(store: Store) -> None:
    r = resolver(store)
    first = await r.resolve(G1, "帮我规划一下周末去杭州的旅行路线", now=0.0)
    res = await r.resolve(G1, "杭州那边住西湖附近还是住滨江", now=120.0)
    assert (res.thread.id, res.rule) == (first.thread.id, ResolveRule.RECENT)


@pytest.mark.asyncio
async def test_lexical_match_on_title_tags_and_goals(store: Store) -> None:
    r = resolver(store)
    arch = await r.create(
        G1,
        "灰风系统架构设计",
        now=0.0,
        tags=("architecture",),
        vision={"origin_goal": "把灰风做成可持续生长的助手"},
    )
    await r.resolve(G1, "推荐几部好看的科幻电影", now=10.0)  # a newer, unrelated thread
    res = await r.resolve(G1, "灰风的架构还要改吗", now=3600.0 * 5)
    assert (res.thread.id, res.rule) == (arch.id, ResolveRule.LEXICAL)
    res = await r.resolve(G1, "那可持续生长的部分怎么做", now=3600.0 * 6)
    assert res.thread.id == arch.id


@pytest.mark.asyncio
async def test_unmatched_input_opens_a_new_thread_titled_from_it(store: Store) -> None:
    r = resolver(store)
    res = await r.resolve(G1, "灰风，帮我查一下明天北京的天气", now=0.0)
    assert res.rule is ResolveRule.NEW
    assert res.created
    assert "北京" in res.thread.title
    assert "灰风" not in res.thread.title
    assert res.thread.vision == {}  # an auto-made thread has no invented intent


@pytest.mark.asyncio
async def test_chatter_is_never_bound_to_a_task_thread(store: Store) -> None:
    r = resolver(store)
    arch = await r.create(G1, "灰风系统架构设计", now=0.0, thread_type="design", bind=True)
    await r.resolve(G1, "架构文档继续写", now=1.0, conversation_thread_id="th-1", message_id="m1")
    for text in ("哈哈哈哈", "早上好", "[图片]", "灰风 在吗", "666"):
        res = await r.resolve(G1, text, now=2.0, conversation_thread_id="th-1")
        assert res.rule is ResolveRule.CHATTER, text
        assert res.thread.id != arch.id
        assert res.thread.type == CASUAL
    casual = {
        (await r.resolve(G1, "嗯嗯", now=3.0)).thread.id,
        (await r.resolve(G2, "嗯嗯", now=3.0)).thread.id,
    }
    assert len(casual) == 2  # one casual thread per chat


@pytest.mark.asyncio
async def test_two_themes_do_not_share_one_thread(store: Store) -> None:
    r = resolver(store)
    travel = await r.resolve(G1, "帮我规划一下周末去杭州的旅行路线", now=0.0)
    other = await r.resolve(G1, "Python 的异步爬虫用什么库比较好", now=60.0)
    assert other.thread.id != travel.thread.id
    assert other.rule is ResolveRule.NEW
    # Named outright, another thread wins even inside a conversation linked to the first one.
    await said(store, G1, "m1", "杭州路线", 0.0, "th-9")
    await r.resolve(G1, "杭州路线", now=61.0, conversation_thread_id="th-9", message_id="m1")
    res = await r.resolve(G1, "说回异步爬虫：aiohttp 还是 httpx", now=62.0, conversation_thread_id="th-9")
    assert res.thread.id == other.thread.id


@pytest.mark.asyncio
async def test_continue_with_nothing_to_continue_is_not_a_theme(store: Store) -> None:
    res = await resolver(store).resolve(G1, "继续", now=0.0)
    assert res.thread.type == CASUAL
    assert await store.list_topic_threads(chat_id=G1) == [res.thread]


@pytest.mark.asyncio
async def test_statistics_count_rules(store: Store) -> None:
    r = resolver(store)
    await r.resolve(G1, "哈哈", now=0.0)
    await r.resolve(G1, "帮我规划一下周末去杭州的旅行路线", now=1.0)
    stats = r.statistics()
    assert stats.resolved == 2
    assert stats.created == 2
    assert dict(stats.by_rule) == {"chatter": 1, "new": 1}


@pytest.mark.asyncio
async def test_open_tasks_are_the_threads_recent_goals(store: Store) -> None:
    r = resolver(store)
    arch = await r.create(G1, "灰风系统架构设计", now=0.0)
    await r.resolve(G1, "推荐几部好看的科幻电影", now=10.0)
    miss = await r.resolve(G1, "向量检索模块写得怎么样了", now=3600.0 * 5)
    assert miss.thread.id != arch.id  # nothing of the thread mentions it yet
    await TaskBook(store).create(arch.id, "写向量检索模块", now=3600.0 * 6)
    res = await r.resolve(G1, "向量检索模块写得怎么样了", now=3600.0 * 24)
    assert (res.thread.id, res.rule) == (arch.id, ResolveRule.LEXICAL)


@pytest.mark.asyncio
async def test_a_thread_note_updates_title_tags_and_vision(store: Store) -> None:
    r = resolver(store)
    made = await r.resolve(G1, "帮我规划一下周末去杭州的旅行路线", now=0.0)
    noted = await r.update(
        made.thread.id, now=10.0, title="杭州周末游", tags=("旅行",), vision={"origin_goal": "两天玩遍西湖"}
    )
    assert (noted.title, noted.tags, noted.vision["origin_goal"]) == ("杭州周末游", ("旅行",), "两天玩遍西湖")
    stored = await store.get_topic_thread(made.thread.id)
    assert stored == noted
    res = await r.resolve(G1, "西湖边住哪里方便", now=3600.0 * 9)
    assert (res.thread.id, res.rule) == (made.thread.id, ResolveRule.LEXICAL)
    with pytest.raises(UnknownTopicThreadError):
        await r.update("topic-missing", now=11.0, title="x")
