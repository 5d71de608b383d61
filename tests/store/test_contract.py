"""The storage contract, run against every backend (the ``store`` fixture is parametrised)."""

from __future__ import annotations

import inspect
from dataclasses import replace

import pytest

from runtime.config.store import StoreConfig
from runtime.store.errors import StoreClosedError
from runtime.store.protocol import RestorePolicy, Store
from runtime.store.records import (
    DUPLICATE_WINDOW,
    ActivationDone,
    EpisodeRecord,
    EpisodeStep,
    EventRecord,
    Handoff,
    LexiconTermRecord,
    Memory,
    MemorySummary,
    MessageRecalled,
    ScheduledActivation,
    ScopeType,
    Session,
    SessionState,
    SpeechRecord,
    StoredMessage,
    Task,
    TaskStatus,
    ToolCallRecord,
    TopicLink,
    TopicThread,
    TopicThreadStatus,
    TranscriptArchive,
    UserProfile,
)
from runtime.store.restore import prune_runtime_state

pytestmark = pytest.mark.asyncio

G1, G2 = "group:1", "group:2"


def msg(chat: str, mid: str, t: float, text: str = "hi", **kw: object) -> StoredMessage:
    return StoredMessage(chat, mid, kw.pop("sender_id", "u1"), "Alice", t, text, **kw)  # type: ignore[arg-type]


def event(eid: str, state: str = "scheduled", t: float = 10.0, **kw: object) -> EventRecord:
    fields: dict[str, object] = {
        "id": eid,
        "kind": "message",
        "chat_id": G1,
        "thread_id": "th-1",
        "actor_ids": ("u1",),
        "evidence_message_ids": ("m1",),
        "created_at": t,
        "updated_at": t,
        "not_before": t + 5,
        "deadline": t + 60,
        "priority": 0.5,
        "state": state,
        "payload": {"reason": "question", "n": 1},
    }
    fields.update(kw)
    return EventRecord(**fields)  # type: ignore[arg-type]


# -- messages -----------------------------------------------------------------------------------------


async def test_messages_round_trip_every_field(store: Store) -> None:
    m = StoredMessage(
        G1,
        "42",
        "u7",
        "小明",
        100.5,
        "早上好 [图片]",
        thread_id="th-3",
        topic_thread_id="tt-1",
        from_self=True,
        recalled=False,
        reply_to="41",
        mentions=("u1", "bot"),
        addressed=True,
    )
    await store.append_messages([m])
    assert await store.get_message(G1, "42") == m
    assert await store.get_message(G2, "42") is None


async def test_message_ids_are_per_chat_and_a_repeated_delivery_is_stored_once(store: Store) -> None:
    await store.append_messages([msg(G1, "1", 1.0, "a"), msg(G2, "1", 1.0, "b")])
    await store.append_messages([msg(G1, "1", 1.0, "a"), msg(G1, "1", 2.5, "a")])  # delivered again
    assert (await store.get_message(G1, "1")).text == "a"  # type: ignore[union-attr]
    assert (await store.get_message(G2, "1")).text == "b"  # type: ignore[union-attr]
    assert await store.count_messages() == 2
    assert await store.count_messages(G1) == 1


async def test_a_reused_message_id_is_a_new_message_and_keeps_the_older_one(store: Store) -> None:
    older = msg(G1, "7", 1.0, "第一次说的苹果")
    other_sender = msg(G1, "7", 5.0, "换个人说的香蕉", sender_id="u2")
    other_text = msg(G1, "7", 9.0, "同一个人说的橙子")
    much_later = msg(G1, "7", 1.0 + 2 * DUPLICATE_WINDOW, "第一次说的苹果")
    await store.append_messages([older, other_sender])
    await store.write([other_text, much_later])
    assert await store.count_messages(G1) == 4
    assert [m.text for m in await store.recent_messages(G1)] == [
        m.text for m in (older, other_sender, other_text, much_later)
    ]
    assert len(await store.search_messages("苹果", chat_ids=[G1])) == 2
    assert len(await store.search_messages("香蕉", chat_ids=[G1])) == 1
    # By id: the most recent message with it (a reply's target, get_messages too).
    assert await store.get_message(G1, "7") == much_later
    assert await store.get_messages(G1, ["7"]) == [much_later]
    # A recall and a topic link apply to the most recent one only.
    await store.write([MessageRecalled(G1, "7"), TopicLink(G1, ("7",), "topic-7")])
    assert [m.recalled for m in await store.recent_messages(G1)] == [False, False, False, True]
    assert [m.time for m in await store.topic_messages("topic-7")] == [much_later.time]
    assert len(await store.search_messages("苹果", chat_ids=[G1])) == 1


async def test_the_bots_own_message_and_its_echo_are_one_message(store: Store) -> None:
    sent = StoredMessage(G1, "90", "self", "灰风", 10.0, "好的", from_self=True)
    echo = StoredMessage(G1, "90", "10000", "灰风", 10.4, "@小明 好的", from_self=True)
    await store.write([sent, echo])
    assert await store.recent_messages(G1) == [sent]


async def test_the_accounts_message_sent_elsewhere_keeps_that_mark_and_is_stored_once(store: Store) -> None:
    # Typed by the account's owner on another device: the account's own, not the bot's words.
    typed = StoredMessage(
        G1, "91", "10000", "灰风", 11.0, "我是号主，晚点回来", from_self=True, sent_elsewhere=True
    )
    bots = StoredMessage(G1, "92", "10000", "灰风", 12.0, "好的", from_self=True)
    await store.write([typed, bots, replace(typed, time=11.5)])  # the first delivered twice
    assert await store.recent_messages(G1) == [typed, bots]
    assert (await store.get_message(G1, "91")) == typed


async def test_get_messages_keeps_requested_order_and_skips_missing(store: Store) -> None:
    await store.append_messages([msg(G1, str(i), float(i)) for i in range(5)])
    found = await store.get_messages(G1, ["3", "nope", "0"])
    assert [m.message_id for m in found] == ["3", "0"]
    assert await store.get_messages(G1, []) == []


async def test_recent_messages_are_the_latest_oldest_first(store: Store) -> None:
    await store.append_messages([msg(G1, str(i), float(i)) for i in range(10)] + [msg(G2, "x", 99.0)])
    recent = await store.recent_messages(G1, limit=3)
    assert [m.message_id for m in recent] == ["7", "8", "9"]
    before = await store.recent_messages(G1, limit=2, before=5.0)
    assert [m.message_id for m in before] == ["3", "4"]


async def test_list_messages_by_time_window(store: Store) -> None:
    await store.append_messages([msg(G1, str(i), float(i)) for i in range(10)])
    window = await store.list_messages(G1, since=2.0, until=5.0)
    assert [m.message_id for m in window] == ["2", "3", "4"]
    assert [m.message_id for m in await store.list_messages(G1, since=8.0, limit=1)] == ["8"]


async def test_conversation_and_topic_messages_stay_in_their_thread(store: Store) -> None:
    await store.append_messages(
        [
            msg(G1, "1", 1.0, thread_id="th-a"),
            msg(G1, "2", 2.0, thread_id="th-b"),
            msg(G1, "3", 3.0, thread_id="th-a"),
            msg(G2, "4", 4.0, thread_id="th-c"),
        ]
    )
    assert [m.message_id for m in await store.conversation_messages("th-a")] == ["1", "3"]
    assert [m.message_id for m in await store.conversation_messages("th-a", limit=1)] == ["3"]
    await store.write([TopicLink(G1, ("1", "2"), "topic-x"), TopicLink(G2, ("4",), "topic-x")])
    assert [m.message_id for m in await store.topic_messages("topic-x")] == ["1", "2", "4"]
    assert [m.message_id for m in await store.topic_messages("topic-x", chat_id=G2)] == ["4"]


async def test_recall_flags_the_message_and_hides_it_from_search(store: Store) -> None:
    await store.append_messages([msg(G1, "1", 1.0, "撤回的秘密")])
    await store.write([MessageRecalled(G1, "1")])
    assert (await store.get_message(G1, "1")).recalled  # type: ignore[union-attr]
    assert await store.search_messages("秘密", chat_ids=[G1]) == []
    assert len(await store.search_messages("秘密", chat_ids=[G1], include_recalled=True)) == 1


async def test_search_never_crosses_chats(store: Store) -> None:
    await store.append_messages([msg(G1, "1", 1.0, "周末去爬山"), msg(G2, "2", 2.0, "周末去爬山")])
    hits = await store.search_messages("爬山", chat_ids=[G1])
    assert [(h.message.chat_id, h.message.message_id) for h in hits] == [(G1, "1")]
    assert await store.search_messages("爬山", chat_ids=[]) == []
    both = await store.search_messages("爬山", chat_ids=[G1, G2])
    assert {h.message.chat_id for h in both} == {G1, G2}


async def test_search_by_topic_thread(store: Store) -> None:
    await store.append_messages(
        [msg(G1, "1", 1.0, "架构评审", topic_thread_id="a"), msg(G1, "2", 2.0, "架构评审")]
    )
    hits = await store.search_messages("架构", chat_ids=[G1], topic_thread_id="a")
    assert [h.message.message_id for h in hits] == ["1"]


async def test_search_ranks_and_limits(store: Store) -> None:
    await store.append_messages(
        [msg(G1, str(i), float(i), f"第{i}条 没关系的话") for i in range(20)]
        + [msg(G1, "best", 50.0, "灰风 灰风 灰风")]
        + [msg(G1, "other", 51.0, "灰风在吗 今天天气不错，我们一起去公园散步然后吃饭再看电影吧")]
    )
    hits = await store.search_messages("灰风", chat_ids=[G1], limit=5)
    assert [h.message.message_id for h in hits] == ["best", "other"]
    assert hits[0].score > hits[1].score
    assert len(await store.search_messages("没关系", chat_ids=[G1], limit=5)) == 5


async def test_a_search_window_ranks_only_the_chats_newest_matches(store: Store) -> None:
    """``newest``: the best of the chat's newest matches, scored as without the window; other chats'
    matches do not take places in it, a recalled message takes one and is not returned."""
    long_line = "灰风在吗 今天天气不错，我们一起去公园散步然后吃饭再看电影吧"
    await store.append_messages(
        [msg(G1, "best-old", 1.0, "灰风 灰风 灰风")]  # the best match of all, and the oldest
        + [msg(G1, f"n{i}", 10.0 + i, f"{long_line} {i}") for i in range(8)]
        + [msg(G2, f"other{i}", 30.0 + i, "灰风 灰风 灰风") for i in range(5)]  # another chat, newer
        + [msg(G1, "short", 40.0, "灰风 灰风")]
        + [msg(G1, "gone", 41.0, "灰风 灰风 灰风")]
    )
    await store.write([MessageRecalled(G1, "gone")])
    everything = await store.search_messages("灰风", chat_ids=[G1], limit=3)
    assert [h.message.message_id for h in everything][:2] == ["best-old", "short"]

    window = await store.search_messages("灰风", chat_ids=[G1], limit=3, newest=4)
    # The newest four matches of G1: gone (recalled), short, n7, n6.
    assert [h.message.message_id for h in window] == ["short", "n7", "n6"]
    scores = {h.message.message_id: h.score for h in everything}
    assert window[0].score == pytest.approx(scores["short"])
    assert [h.message.message_id for h in await store.search_messages("灰风", chat_ids=[G1], newest=1)] == []
    assert await store.search_messages("灰风", chat_ids=[G1], newest=0) == []


async def test_messages_since_keeps_each_chats_latest(store: Store) -> None:
    await store.append_messages(
        [msg(G1, f"a{i}", float(i)) for i in range(10)] + [msg(G2, f"b{i}", float(i) + 0.5) for i in range(3)]
    )
    got = await store.messages_since(5.0, per_chat=2)
    assert [m.message_id for m in got] == ["a8", "a9"]
    got = await store.messages_since(0.0, per_chat=2)
    assert [m.message_id for m in got] == ["b1", "b2", "a8", "a9"]


# -- events, activations, speeches, lexicon ------------------------------------------------------------


async def test_events_round_trip_and_filter_by_state(store: Store) -> None:
    e1, e2 = event("ev-1", "scheduled", 1.0), event("ev-2", "replied", 2.0, deadline=None, thread_id=None)
    await store.save_event(e1)
    await store.write([e2])
    assert await store.get_event("ev-1") == e1
    assert await store.get_event("ev-2") == e2
    assert [e.id for e in await store.load_events()] == ["ev-1", "ev-2"]
    assert [e.id for e in await store.load_events(states=["replied"])] == ["ev-2"]
    assert await store.prune_events(states=["replied"], updated_before=5.0) == 1
    assert await store.delete_event("ev-1")
    assert not await store.delete_event("ev-1")
    assert await store.load_events() == []


async def test_event_record_fields_match_the_kernel_event() -> None:
    e = event("ev-9")
    assert EventRecord.from_event(e) == e
    assert set(e.fields()) >= {"id", "state", "payload", "not_before", "deadline"}


async def test_activations_pending_until_done(store: Store) -> None:
    a = ScheduledActivation("ev-1", G1, not_before=20.0, deadline=80.0, priority=0.2, created_at=1.0)
    b = ScheduledActivation("ev-2", G1, not_before=20.0, deadline=None, priority=0.9, created_at=1.0)
    c = ScheduledActivation("ev-3", G2, not_before=10.0, deadline=None, priority=0.0, created_at=1.0)
    await store.write([a, b])
    await store.save_activation(c)
    assert [x.event_id for x in await store.load_pending_activations()] == ["ev-3", "ev-2", "ev-1"]
    await store.write([ActivationDone("ev-2")])
    assert await store.delete_activation("ev-3")
    assert await store.load_pending_activations() == [a]


async def test_saving_then_finishing_an_activation_in_one_batch_keeps_order(store: Store) -> None:
    a = ScheduledActivation("ev-1", G1, 20.0, None, 0.2, 1.0)
    await store.write([a, ActivationDone("ev-1")])
    assert await store.load_pending_activations() == []
    await store.write([ActivationDone("ev-1"), a])
    assert await store.load_pending_activations() == [a]


async def test_speech_log_per_chat(store: Store) -> None:
    await store.write([SpeechRecord(G1, 1.0), SpeechRecord(G1, 5.0, forced=True), SpeechRecord(G2, 6.0)])
    await store.append_speech(SpeechRecord(G1, 9.0))
    assert await store.recent_speeches(G1, since=5.0) == [SpeechRecord(G1, 5.0, True), SpeechRecord(G1, 9.0)]
    by_chat = await store.load_recent_speeches(since=2.0)
    assert {k: len(v) for k, v in by_chat.items()} == {G1: 2, G2: 1}
    assert await store.prune_speeches(before=5.5) == 2
    assert await store.recent_speeches(G1, since=0.0) == [SpeechRecord(G1, 9.0)]


async def test_lexicon_terms_save_replace_delete(store: Store) -> None:
    t1 = LexiconTermRecord("group", G1, "原神", 0.7, pinned=True, hits=3, created_at=1.0, updated_at=2.0)
    t2 = LexiconTermRecord("global", "", "灰风", 1.0, source="persona", expires_at=99.0, extra={"conf": 0.4})
    await store.save_lexicon_terms([t1, t2])
    assert await store.load_lexicon_terms() == [t2, t1]
    assert await store.load_lexicon_terms(scope="group", owner=G1) == [t1]
    await store.save_lexicon_terms([LexiconTermRecord("group", G1, "原神", 0.1)])
    assert (await store.load_lexicon_terms(scope="group"))[0].weight == 0.1
    assert await store.delete_lexicon_term("global", "", "灰风")
    assert not await store.delete_lexicon_term("global", "", "灰风")
    await store.replace_lexicon_terms([t2])
    assert await store.load_lexicon_terms() == [t2]


# -- topic threads, sessions, handoffs, tasks ----------------------------------------------------------


async def test_topic_threads(store: Store) -> None:
    arch = TopicThread(
        "tt-arch",
        "灰风架构设计",
        "design",
        "架构讨论",
        created_at=1.0,
        updated_at=5.0,
        vision={"origin_goal": "生长式人格", "done_when": ["可以自然对话"]},
        tags=("architecture",),
        chat_ids=(G1,),
    )
    video = TopicThread("tt-video", "陪我看视频", "companion", "", 2.0, 9.0, chat_ids=(G2,))
    old = TopicThread("tt-old", "旧话题", "chat", "", 0.0, 1.0, status=TopicThreadStatus.ARCHIVED)
    for t in (arch, video, old):
        await store.upsert_topic_thread(t)
    assert await store.get_topic_thread("tt-arch") == arch
    assert [t.id for t in await store.list_topic_threads()] == ["tt-video", "tt-arch", "tt-old"]
    active = await store.list_topic_threads(statuses=[TopicThreadStatus.ACTIVE])
    assert [t.id for t in active] == ["tt-video", "tt-arch"]
    assert [t.id for t in await store.list_topic_threads(chat_id=G1)] == ["tt-arch"]
    assert [t.id for t in await store.list_topic_threads(limit=1)] == ["tt-video"]


async def test_a_chats_threads_follow_every_change_of_a_threads_chats(store: Store) -> None:
    """A thread bound to a second chat is listed there too, newest first with the chat's others; one
    whose chats change leaves the chat it no longer names; a status filter and a limit still apply."""
    arch = TopicThread("tt-arch", "灰风架构设计", "design", "", 1.0, 5.0, chat_ids=(G1,))
    video = TopicThread("tt-video", "陪我看视频", "companion", "", 2.0, 9.0, chat_ids=(G2,))
    await store.upsert_topic_thread(arch)
    await store.upsert_topic_thread(video)

    await store.upsert_topic_thread(replace(arch, chat_ids=(G1, G2), updated_at=6.0))
    assert [t.id for t in await store.list_topic_threads(chat_id=G2)] == ["tt-video", "tt-arch"]
    assert [t.id for t in await store.list_topic_threads(chat_id=G2, limit=1)] == ["tt-video"]
    assert [t.id for t in await store.list_topic_threads(chat_id=G1)] == ["tt-arch"]

    await store.upsert_topic_thread(replace(arch, chat_ids=(G2,), updated_at=10.0))
    assert await store.list_topic_threads(chat_id=G1) == []
    assert [t.id for t in await store.list_topic_threads(chat_id=G2)] == ["tt-arch", "tt-video"]

    await store.upsert_topic_thread(replace(video, status=TopicThreadStatus.ARCHIVED))
    live = await store.list_topic_threads(chat_id=G2, statuses=[TopicThreadStatus.ACTIVE])
    assert [t.id for t in live] == ["tt-arch"]
    assert await store.list_topic_threads(chat_id="group:3") == []


def session(sid: str, state: SessionState = SessionState.ACTIVE, t: float = 1.0, **kw: object) -> Session:
    return Session(sid, kw.pop("topic", "tt-arch"), kw.pop("chat", G1), state, t, t, **kw)  # type: ignore[arg-type]


async def test_sessions_and_transcripts(store: Store) -> None:
    s1 = session(
        "s1",
        recent_dialogue=("用户要求重写 architecture v2",),
        recent_actions=("生成文档草案",),
        screen_context={"chat": G1, "name": "架构群", "activity": None},
        interruptions=({"kind": "process_exit", "at": 3.0},),
        resume_point="继续写 context-runtime",
    )
    s2 = session("s2", SessionState.CLOSED, 2.0, ended_at=4.0, topic="tt-video", chat=G2)
    await store.upsert_session(s1)
    await store.upsert_session(s2)
    assert await store.get_session("s1") == s1
    assert [s.id for s in await store.list_sessions()] == ["s2", "s1"]
    assert [s.id for s in await store.list_sessions(topic_thread_id="tt-arch")] == ["s1"]
    assert [s.id for s in await store.list_sessions(chat_id=G2)] == ["s2"]
    assert [s.id for s in await store.list_sessions(states=[SessionState.CLOSED])] == ["s2"]
    archive = TranscriptArchive("s2", "tt-video", G2, '[{"role":"user"}]', 4.0, fmt="json")
    await store.save_transcript(archive)
    assert await store.get_transcript("s2") == archive
    assert await store.get_transcript("s1") is None


async def test_latest_handoff_reaches_the_next_session(store: Store) -> None:
    h1 = Handoff("h1", "s1", "tt-arch", "第一代", 10.0, to_session_id="s2", unfinished_items=("定义 slot",))
    h2 = Handoff(
        "h2", "s2", "tt-arch", "第二代", 20.0, risks=("不要退回纯记忆注入",), resume_suggestion="先写文档"
    )
    other = Handoff("h3", "s9", "tt-video", "别的线", 30.0, written_by="fallback")
    for h in (h2, h1, other):
        await store.save_handoff(h)
    assert await store.latest_handoff("tt-arch") == h2
    assert await store.latest_handoff("tt-none") is None
    assert [h.id for h in await store.list_handoffs("tt-arch")] == ["h2", "h1"]
    assert await store.get_handoff("h3") == other


async def test_tasks(store: Store) -> None:
    t1 = Task("task-1", "tt-arch", "写 context-runtime.md", TaskStatus.OPEN, 1.0, 1.0, tags=("doc",))
    t2 = Task("task-2", "tt-arch", "评审", TaskStatus.DONE, 1.0, 3.0, conclusion="通过")
    await store.upsert_task(t1)
    await store.upsert_task(t2)
    assert await store.get_task("task-2") == t2
    assert [t.id for t in await store.list_tasks(topic_thread_id="tt-arch")] == ["task-2", "task-1"]
    assert [t.id for t in await store.list_tasks(statuses=[TaskStatus.OPEN])] == ["task-1"]
    assert await store.list_tasks(topic_thread_id="tt-video") == []


# -- memories ----------------------------------------------------------------------------------------


def memory(mid: str, scope: ScopeType, sid: str, content: str, t: float = 1.0, **kw: object) -> Memory:
    return Memory(
        mid, scope, sid, kw.pop("memory_type", "fact"), content, kw.pop("importance", 0.5), t, t, **kw
    )  # type: ignore[arg-type]


async def test_memories_respect_scopes(store: Store) -> None:
    g1 = memory("m1", ScopeType.CHAT, G1, "一群的人喜欢原神", tags=("game",))
    g2 = memory("m2", ScopeType.CHAT, G2, "二群的人喜欢原神", 2.0)
    ident = memory("m3", ScopeType.IDENTITY, "", "灰风喜欢原神", 3.0, importance=0.9)
    for m in (g1, g2, ident):
        await store.upsert_memory(m)
    mine = [(ScopeType.CHAT, G1), (ScopeType.IDENTITY, "")]
    assert [m.id for m in await store.list_memories(scopes=mine)] == ["m3", "m1"]
    assert {h.memory.id for h in await store.search_memories("原神", scopes=mine)} == {"m1", "m3"}
    assert await store.search_memories("原神", scopes=[]) == []
    assert await store.list_memories(scopes=[]) == []
    assert [m.id for m in await store.list_memories(scopes=mine, tags=["game"])] == ["m1"]
    assert [m.id for m in await store.list_memories(scopes=mine, min_importance=0.8)] == ["m3"]
    assert [m.id for m in await store.list_memories(scopes=mine, since=2.5)] == ["m3"]
    assert await store.list_memories(scopes=mine, memory_types=["sop"]) == []
    assert await store.count_memories() == 3


async def test_searching_several_words_at_once_finds_what_each_search_finds(store: Store) -> None:
    contents = [
        "杭州的路线定了西湖和灵隐寺",
        "杭州三日游第二天去西湖",
        "路线上要避开周末的西湖",
        "灵隐寺周一不开门",
        "三日游的预算是两千",
        "别的群也去杭州",
    ]
    for n, content in enumerate(contents):
        scope = (ScopeType.CHAT, G2) if n == 5 else (ScopeType.CHAT, G1)
        await store.upsert_memory(
            memory(f"m{n}", *scope, content, float(n), importance=(0.5, 0.9)[n % 2], embedding=bytes(n))
        )
    await store.upsert_memory(memory("m9", ScopeType.IDENTITY, "", "灰风记得杭州的西湖", importance=0.5))
    scopes = [(ScopeType.CHAT, G1), (ScopeType.IDENTITY, "")]
    words = ["杭州", "西湖", "的", "灵隐寺", "", "？", "没有的词", "西湖"]
    for limit in (1, 2, 10):
        for asked in (words, ["西湖"], ["？", "杭州"]):
            each = await store.search_memories_each(asked, scopes=scopes, limit=limit)
            alone = [await store.search_memories(w, scopes=scopes, limit=limit) for w in asked]
            assert each == alone, (asked, limit)
    each = await store.search_memories_each(words, scopes=scopes, limit=10)
    assert len(each[1]) == 4, each[1]  # the rows themselves, vectors and all
    assert await store.search_memories_each(words, scopes=[], limit=5) == [[] for _ in words]
    assert await store.search_memories_each([], scopes=scopes) == []


async def test_memory_vectors_are_stored_not_computed(store: Store) -> None:
    blob = bytes(range(16))
    await store.upsert_memory(memory("m1", ScopeType.CHAT, G1, "向量", embedding=blob, embedding_model="e1"))
    await store.upsert_memory(memory("m2", ScopeType.CHAT, G1, "没有向量"))
    await store.upsert_memory(memory("m3", ScopeType.CHAT, G2, "别的群"))
    await store.save_memory_vector("m3", b"\x00" * 8, model="e1")
    await store.save_memory_vector("unknown", b"\x01")  # ignored
    got = await store.get_memory("m1")
    assert got is not None
    assert (got.embedding, got.embedding_model) == (blob, "e1")
    vectors = await store.load_memory_vectors(scopes=[(ScopeType.CHAT, G1)])
    assert [(v.memory_id, v.data, v.model) for v in vectors] == [("m1", blob, "e1")]
    await store.save_memory_vector("m2", b"\x02" * 4, model="e2")
    assert [
        v.memory_id for v in await store.load_memory_vectors(scopes=[(ScopeType.CHAT, G1)], model="e2")
    ] == ["m2"]
    assert await store.delete_memory("m1")
    assert await store.get_memory("m1") is None
    assert [v.memory_id for v in await store.load_memory_vectors(scopes=[(ScopeType.CHAT, G1)])] == ["m2"]


async def test_memory_upsert_replaces_content_in_the_index(store: Store) -> None:
    await store.upsert_memory(memory("m1", ScopeType.USER, "u1", "喜欢猫"))
    await store.upsert_memory(memory("m1", ScopeType.USER, "u1", "喜欢狗"))
    scopes = [(ScopeType.USER, "u1")]
    assert await store.search_memories("猫", scopes=scopes) == []
    assert [h.memory.content for h in await store.search_memories("狗", scopes=scopes)] == ["喜欢狗"]


# -- memory layer, episodes, tool calls -----------------------------------------------------------------


async def test_memory_summaries_keep_their_counters(store: Store) -> None:
    s = MemorySummary(
        "group:1/th-1",
        3,
        {"version": 3, "summary": {"requirements": ["用中文"], "open_questions": []}},
        rounds_processed=47,
        rounds_since_compression=7,
        tokens_since_compression=12_000,
        last_compressed_at=100.0,
        updated_at=120.0,
        injection_log=({"at": 100.0, "tokens": 900},),
    )
    await store.upsert_memory_summary(s)
    assert await store.get_memory_summary("group:1/th-1") == s
    assert await store.list_memory_summaries() == [s]
    assert await store.get_memory_summary("other") is None


async def test_token_usage_accumulates_per_chat_and_day(store: Store) -> None:
    await store.add_token_usage(G1, "2026-03-11", prompt_tokens=100, completion_tokens=20)
    total = await store.add_token_usage(G1, "2026-03-11", prompt_tokens=50, completion_tokens=5, calls=2)
    assert (total.prompt_tokens, total.completion_tokens, total.calls) == (150, 25, 3)
    await store.add_token_usage(G2, "2026-03-11", prompt_tokens=1, completion_tokens=1)
    await store.add_token_usage(G1, "2026-03-12", prompt_tokens=1, completion_tokens=1)
    assert await store.get_token_usage(G1, "2026-03-11") == total
    assert (await store.get_token_usage(G2, "2026-01-01")).prompt_tokens == 0
    assert [(u.chat_id, u.day) for u in await store.list_token_usage(day="2026-03-11")] == [
        (G1, "2026-03-11"),
        (G2, "2026-03-11"),
    ]
    assert len(await store.list_token_usage(chat_id=G1)) == 2


async def test_user_profiles(store: Store) -> None:
    p = UserProfile("u1", "小明", 5.0, preferences=("喜欢简短回答",), relationship="老朋友", extra={"n": 1})
    await store.upsert_user_profile(p)
    assert await store.get_user_profile("u1") == p
    assert await store.get_user_profiles(["u2", "u1"]) == {"u1": p}
    assert await store.get_user_profile("u2") is None


async def test_episodes_with_steps(store: Store) -> None:
    steps = (
        EpisodeStep("ep-1", 0, "thought", 1.0, {"text": "看看"}),
        EpisodeStep("ep-1", 1, "action", 1.5, {"tool": "reply"}),
    )
    ep = EpisodeRecord("ep-1", G1, 1.0, "running", event_id="ev-1", session_id="s1", steps=steps)
    await store.save_episode(ep)
    await store.append_episode_step(EpisodeStep("ep-1", 2, "observation", 2.0, {"ok": True}))
    await store.save_episode(
        EpisodeRecord("ep-1", G1, 1.0, "done", event_id="ev-1", ended_at=3.0, outcome="replied")
    )
    got = await store.get_episode("ep-1")
    assert got is not None
    assert (got.state, got.outcome) == ("done", "replied")
    assert [s.index for s in got.steps] == [0, 1, 2]
    assert got.steps[0] == steps[0]
    await store.save_episode(EpisodeRecord("ep-2", G2, 5.0, "done"))
    assert [e.id for e in await store.list_episodes()] == ["ep-2", "ep-1"]
    assert [e.id for e in await store.list_episodes(chat_id=G1)] == ["ep-1"]
    assert await store.get_episode("nope") is None


async def test_tool_calls(store: Store) -> None:
    c1 = ToolCallRecord("tc-1", "search", G1, 1.0, {"q": "灰风"}, episode_id="ep-1")
    c2 = ToolCallRecord("tc-2", "dice", G1, 2.0, {}, episode_id="ep-2", status="error", error="boom")
    await store.save_tool_call(c1)
    await store.write([c2])
    done = ToolCallRecord(
        "tc-1", "search", G1, 1.0, {"q": "灰风"}, episode_id="ep-1", result="3 hits", ended_at=1.2
    )
    await store.save_tool_call(done)
    assert await store.list_tool_calls() == [done, c2]
    assert await store.list_tool_calls(episode_id="ep-2") == [c2]
    assert await store.list_tool_calls(limit=1) == [c2]


# -- batches, restoration, lifecycle --------------------------------------------------------------------


async def test_write_batch_is_all_or_nothing(store: Store) -> None:
    good = msg(G1, "1", 1.0)
    with pytest.raises(TypeError):
        await store.write([good, "not a record"])  # type: ignore[list-item]
    assert await store.get_message(G1, "1") is None
    await store.write([good])
    assert store.statistics().items_written >= 1


async def test_load_runtime_state(store: Store) -> None:
    now = 100_000.0
    await store.write(
        [
            event("ev-live", "scheduled", now - 10),
            event("ev-done", "replied", now - 10),
            ScheduledActivation("ev-live", G1, now + 5, None, 0.5, now - 10),
            SpeechRecord(G1, now - 60),
            SpeechRecord(G1, now - 90_000),
            msg(G1, "old", now - 7200),
            msg(G1, "new", now - 60, thread_id="th-1"),
        ]
    )
    await store.save_lexicon_terms([LexiconTermRecord("group", G1, "原神", 0.5)])
    await store.upsert_topic_thread(TopicThread("tt", "t", "chat", "", 1.0, 1.0))
    await store.upsert_topic_thread(
        TopicThread("tt-x", "x", "chat", "", 1.0, 1.0, status=TopicThreadStatus.ARCHIVED)
    )
    await store.upsert_session(session("s-open", SessionState.ACTIVE))
    await store.upsert_session(session("s-idle", SessionState.IDLE))
    await store.upsert_session(session("s-closed", SessionState.CLOSED))
    state = await store.load_runtime_state(now=now, policy=RestorePolicy(speech_window=3600.0))
    assert [e.id for e in state.events] == ["ev-live"]
    assert [a.event_id for a in state.pending_activations] == ["ev-live"]
    assert {k: [s.time for s in v] for k, v in state.speeches.items()} == {G1: [now - 60]}
    assert [t.term for t in state.lexicon_terms] == ["原神"]
    assert [(m.message_id, m.thread_id) for m in state.recent_messages] == [("new", "th-1")]
    assert [t.id for t in state.topic_threads] == ["tt"]
    assert {s.id for s in state.open_sessions} == {"s-open", "s-idle"}


async def test_closed_store_refuses_work(store: Store) -> None:
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        await store.get_message(G1, "1")
    with pytest.raises(StoreClosedError):
        await store.write([msg(G1, "1", 1.0)])


async def test_statistics_count_messages_and_batches(store: Store) -> None:
    before = store.statistics()
    await store.append_messages([msg(G1, "1", 1.0), msg(G1, "2", 2.0)])
    await store.write([msg(G1, "2", 2.0), msg(G2, "1", 3.0), SpeechRecord(G1, 4.0)])  # "2" again
    stats = store.statistics()
    assert stats.messages == 3 == await store.count_messages()
    assert stats.batches_written - before.batches_written == 2
    assert stats.items_written - before.items_written == 5


async def test_restore_policy_from_config() -> None:

    policy = RestorePolicy.from_config(
        StoreConfig(restore_speech_window_ms=60_000, restore_messages_per_chat=7)
    )
    assert (policy.speech_window, policy.messages_per_chat) == (60.0, 7)


async def test_backends_implement_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)
    for name in (n for n in dir(Store) if not n.startswith("_") and callable(getattr(Store, n))):
        expected = inspect.signature(getattr(Store, name))
        actual = inspect.signature(getattr(type(store), name))
        shape = [(p.name, p.kind, p.default) for p in expected.parameters.values()]
        assert [(p.name, p.kind, p.default) for p in actual.parameters.values()] == shape, name


async def test_prune_runtime_state_forgets_only_what_restore_would_skip(store: Store) -> None:
    now = 100_000.0
    await store.write(
        [
            event("old-done", "replied", now - 90_000),
            event("old-waiting", "scheduled", now - 90_000),
            event("new-done", "skipped", now - 60),
            SpeechRecord(G1, now - 90_000),
            SpeechRecord(G1, now - 60),
        ]
    )
    report = await prune_runtime_state(store, now=now, policy=RestorePolicy(speech_window=3_600.0))
    assert (report.events, report.speeches) == (1, 1)
    assert {e.id for e in await store.load_events()} == {"old-waiting", "new-done"}
    assert [s.time for s in await store.recent_speeches(G1, since=0.0)] == [now - 60]


async def test_a_lone_surrogate_costs_a_replacement_character_not_the_batch(store: Store) -> None:
    odd = StoredMessage(G1, "2", "u\ud800", "名\udfff", 2.0, "半个\ud83d表情", mentions=("x\ud800",))
    await store.write([msg(G1, "1", 1.0, "前"), odd, msg(G1, "3", 3.0, "后")])
    assert [m.message_id for m in await store.recent_messages(G1)] == ["1", "2", "3"]
    stored = await store.get_message(G1, "2")
    assert stored is not None
    assert (stored.sender_id, stored.sender_name, stored.text) == ("u\ufffd", "名\ufffd", "半个\ufffd表情")
    assert stored.mentions == ("x\ufffd",)
    assert len(await store.search_messages("表情", chat_ids=[G1])) == 1
