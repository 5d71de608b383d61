"""ContextBuilder end to end over the in-memory store: isolation between conversations and chats,
handoff N → N+1 in the packet, a stable prefix across turns, reasons counted, failures degrading."""

from __future__ import annotations

import pytest

from runtime.config import parse_config
from runtime.context.builder import ChatInfo, RecentBuffer, RecentBufferStatistics
from runtime.context.setup import ContextRuntime, context_runtime
from runtime.kernel.message import SENT_ELSEWHERE_LABEL, ChatKind, ChatMessage
from runtime.store.protocol import Store
from runtime.store.records import Memory, ScopeType, StoredMessage

G1 = ChatInfo("group:1", "group", "灰风开发群")
G2 = ChatInfo("group:2", "group", "吃货群")


def runtime(store: Store, **kw: object) -> ContextRuntime:
    return context_runtime(store, parse_config({}), **kw)  # type: ignore[arg-type]


def msg(chat: ChatInfo, mid: str, sender: str, text: str, t: float, **kw: object) -> ChatMessage:
    return ChatMessage(
        message_id=mid,
        chat_kind=ChatKind(chat.surface),
        chat_ident=chat.chat_id.split(":")[1],
        sender_id=sender,
        sender_name=f"名{sender}",
        time=t,
        text=text,
        **kw,  # type: ignore[arg-type]
    )


async def store_msg(store: Store, m: ChatMessage, thread_id: str) -> None:
    await store.append_messages([StoredMessage.from_chat_message(m, thread_id=thread_id)])


def everything_sent(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)


@pytest.mark.asyncio
async def test_two_conversations_in_one_group_never_leak_into_each_others_packets(store: Store) -> None:
    rt = runtime(store)
    # Two interleaved conversations in group 1: architecture (th-a) and dinner (th-b).
    script = [
        ("a1", "u1", "灰风的上下文运行时要分几层", "th-a"),
        ("b1", "u2", "今晚吃火锅还是烧烤", "th-b"),
        ("a2", "u3", "persona、vision、thread 三层先定下来", "th-a"),
        ("b2", "u4", "烧烤吧，火锅上周吃过了", "th-b"),
    ]
    for i, (mid, sender, text, th) in enumerate(script):
        await store_msg(store, msg(G1, mid, sender, text, float(i)), th)
    bot = msg(G1, "a3", "bot", "我建议先做 persona 和 session", 4.0, from_self=True, reply_to="a2")
    await store_msg(store, bot, "th-a")
    trigger = msg(G1, "a4", "u1", "灰风，session 这层怎么设计", 5.0, addressed=True)
    await store_msg(store, trigger, "th-a")
    built, prompt = await rt.prepare(
        trigger, chat=G1, now=5.0, reason="forced", conversation_thread_id="th-a"
    )
    sent = everything_sent(prompt.as_messages())
    assert "persona、vision、thread 三层先定下来" in sent
    assert "我建议先做 persona 和 session" in sent  # the bot's own turn in this conversation
    assert {"role": "assistant", "content": "我建议先做 persona 和 session"} in prompt.as_messages()
    assert "火锅" not in sent
    assert "烧烤" not in sent
    assert [t.message_id for t in built.packet.session.recent_dialogue] == ["a1", "a2", "a3"]
    assert prompt.as_messages()[-1]["content"] == "名u1: 灰风，session 这层怎么设计"

    other = msg(G1, "b3", "u2", "灰风你说吃啥", 6.0, addressed=True)
    await store_msg(store, other, "th-b")
    built_b, prompt_b = await rt.prepare(
        other, chat=G1, now=6.0, reason="forced", conversation_thread_id="th-b"
    )
    sent_b = everything_sent(prompt_b.as_messages())
    assert "烧烤吧，火锅上周吃过了" in sent_b
    for words in ("上下文运行时", "三层先定下来", "我建议先做", "session"):
        assert words not in sent_b
    assert [t.message_id for t in built_b.packet.session.recent_dialogue] == ["b1", "b2"]
    assert built_b.packet.thread.thread_id != built.packet.thread.thread_id


@pytest.mark.asyncio
async def test_nothing_crosses_groups(store: Store) -> None:
    rt = runtime(store)
    await store.upsert_memory(
        Memory("g2-secret", ScopeType.CHAT, G2.chat_id, "fact", "吃货群的火锅局在周六", 1.0, 1.0)
    )
    await store.upsert_memory(
        Memory("g1-fact", ScopeType.CHAT, G1.chat_id, "fact", "开发群周五也约了火锅", 0.5, 1.0)
    )
    m2 = msg(G2, "x1", "u9", "周六火锅谁去", 1.0)
    await store_msg(store, m2, "th-x")
    await rt.prepare(m2, chat=G2, now=1.0, reason="high", conversation_thread_id="th-x")
    m1 = msg(G1, "y1", "u1", "灰风，火锅是周几来着", 2.0, addressed=True)
    await store_msg(store, m1, "th-y")
    built, prompt = await rt.prepare(m1, chat=G1, now=2.0, reason="forced", conversation_thread_id="th-y")
    sent = everything_sent(prompt.as_messages())
    assert "吃货群" not in sent
    assert "周六" not in sent
    assert "开发群周五也约了火锅" in sent
    assert built.packet.thread is not None
    assert G2.chat_id not in (await store.get_topic_thread(built.packet.thread.thread_id)).chat_ids
    # Pretending the message came from another chat is refused outright.
    with pytest.raises(ValueError, match="built in"):
        await rt.prepare(m2, chat=G1, now=3.0, reason="forced")


@pytest.mark.asyncio
async def test_the_previous_sessions_handoff_is_in_the_next_sessions_packet(store: Store) -> None:
    rt = runtime(store)
    first = msg(G1, "m1", "u1", "帮我规划周末去杭州的旅行路线", 0.0, addressed=True)
    await store_msg(store, first, "th-1")
    built, _ = await rt.prepare(first, chat=G1, now=0.0, reason="forced", conversation_thread_id="th-1")
    await rt.builder.record_reply(built, "第一天西湖，第二天灵隐寺", now=1.0, resume_point="定住宿")
    assert built.packet.handoff is None
    await rt.sessions.sweep(now=1.0 + 3600.0)  # idle past the timeout: closed, handoff written
    later = msg(G1, "m2", "u1", "继续说杭州的住宿", 4000.0, addressed=True)
    await store_msg(store, later, "th-2")
    built2, prompt2 = await rt.prepare(
        later, chat=G1, now=4000.0, reason="forced", conversation_thread_id="th-2"
    )
    assert built2.packet.thread.thread_id == built.packet.thread.thread_id
    assert built2.session.id != built.session.id
    assert built2.packet.handoff is not None
    assert built2.packet.handoff.from_session_id == built.session.id
    assert built2.packet.handoff.resume_suggestion == "定住宿"
    assert "上一次会话的交接" in everything_sent(prompt2.as_messages())
    # A later turn of the same session still carries it.
    again = msg(G1, "m3", "u1", "杭州住宿预算五百", 4010.0, addressed=True)
    built3, _ = await rt.prepare(again, chat=G1, now=4010.0, reason="forced", conversation_thread_id="th-2")
    assert built3.session.id == built2.session.id
    assert built3.packet.handoff == built2.packet.handoff


@pytest.mark.asyncio
async def test_stable_prefix_is_identical_across_the_turns_of_a_session(store: Store) -> None:
    rt = runtime(store)
    prefixes = set()
    for i in range(6):
        m = msg(
            G1, f"m{i}", f"u{i % 2}", f"第{i}轮：帮我规划周末去杭州的旅行路线", float(i * 10), addressed=True
        )
        await store_msg(store, m, "th-1")
        built, prompt = await rt.prepare(
            m, chat=G1, now=float(i * 10), reason="forced", conversation_thread_id="th-1"
        )
        await rt.builder.record_reply(built, f"回答{i}", now=i * 10 + 1.0)
        prefixes.add(prompt.as_messages()[0]["content"].encode())
    assert len(prefixes) == 1
    assert rt.sessions.statistics().created == 1


@pytest.mark.asyncio
async def test_packets_are_counted_by_reason_and_low_is_refused(store: Store) -> None:
    rt = runtime(store)
    for i, reason in enumerate(("forced", "high", "medium", "forced")):
        m = msg(G1, f"m{i}", "u1", "杭州旅行路线怎么排", float(i))
        await rt.prepare(m, chat=G1, now=float(i), reason=reason, conversation_thread_id="th-1")
    await rt.prepare(None, chat=G1, now=10.0, reason="proactive", cue="群里安静了很久，问问杭州行程定了没")
    stats = rt.statistics().builder
    assert stats.packets == 5
    assert dict(stats.by_reason) == {"forced": 2, "high": 1, "medium": 1, "proactive": 1}
    with pytest.raises(ValueError, match="low"):
        await rt.prepare(m, chat=G1, now=11.0, reason="low")


@pytest.mark.asyncio
async def test_a_proactive_wake_for_a_named_thread(store: Store) -> None:
    rt = runtime(store)
    thread = await rt.resolver.create(
        G1.chat_id, "陪我看视频", now=0.0, vision={"origin_goal": "一起把纪录片看完"}
    )
    built, prompt = await rt.prepare(
        None, chat=G1, now=5.0, reason="proactive", cue="提醒大家今晚继续看第三集", topic_thread_id=thread.id
    )
    assert built.packet.thread.thread_id == thread.id
    assert built.packet.vision.origin_goal == "一起把纪录片看完"
    assert prompt.as_messages()[-1] == {"role": "user", "content": "[proactive] 提醒大家今晚继续看第三集"}
    # A thread of another chat cannot be named into this one.
    other = await rt.resolver.create(G2.chat_id, "吃货群的话题", now=0.0)
    built2, _ = await rt.prepare(
        None, chat=G1, now=6.0, reason="proactive", cue="吃货群的话题", topic_thread_id=other.id
    )
    assert built2.packet.thread.thread_id != other.id


@pytest.mark.asyncio
async def test_unflushed_messages_come_from_the_recent_buffer(store: Store) -> None:
    recent = RecentBuffer()
    rt = runtime(store, recent=recent)
    earlier = msg(G1, "m1", "u1", "杭州第一天去西湖", 0.0)
    recent.add(StoredMessage.from_chat_message(earlier, thread_id="th-1"))
    recent.add(StoredMessage.from_chat_message(msg(G1, "n1", "u2", "另一个对话", 0.5), thread_id="th-2"))
    trigger = msg(G1, "m2", "u1", "灰风第二天呢", 1.0, addressed=True)
    recent.add(StoredMessage.from_chat_message(trigger, thread_id="th-1"))
    built, _ = await rt.prepare(trigger, chat=G1, now=1.0, reason="forced", conversation_thread_id="th-1")
    assert [t.message_id for t in built.packet.session.recent_dialogue] == ["m1"]


class BrokenRetrieval:
    async def retrieve(self, query: object, **kwargs: object) -> tuple[()]:
        raise RuntimeError("index unavailable")


@pytest.mark.asyncio
async def test_a_failing_part_degrades_the_packet_but_the_turn_goes_on(store: Store) -> None:
    rt = runtime(store)
    rt.builder._retrieval = BrokenRetrieval()  # type: ignore[assignment]
    m = msg(G1, "m1", "u1", "灰风，杭州旅行路线怎么排", 0.0, addressed=True)
    built, prompt = await rt.prepare(m, chat=G1, now=0.0, reason="forced", conversation_thread_id="th-1")
    assert built.degraded == ("retrieval",)
    assert built.packet.retrieved == ()
    assert prompt.as_messages()[-1]["content"].endswith("杭州旅行路线怎么排")
    assert rt.statistics().builder.degraded == 1


@pytest.mark.asyncio
async def test_a_reply_quotes_its_target_when_it_is_not_in_the_dialogue(store: Store) -> None:
    rt = runtime(store)
    old = msg(G1, "q1", "u5", "明天十点开会", 0.0)
    await store_msg(store, old, "th-old")
    trigger = msg(G1, "m1", "u1", "灰风这个会要准备什么", 100.0, reply_to="q1", addressed=True)
    built, prompt = await rt.prepare(
        trigger, chat=G1, now=100.0, reason="forced", conversation_thread_id="th-new"
    )
    assert built.packet.user_input.attached_context == "名u5: 明天十点开会"
    assert prompt.as_messages()[-1]["content"].startswith("（引用：名u5: 明天十点开会）")


@pytest.mark.asyncio
async def test_a_quoted_message_its_account_sent_elsewhere_is_quoted_as_the_accounts(store: Store) -> None:
    rt = runtime(store)
    typed = msg(G1, "q1", "10000", "今晚八点我亲自答疑", 0.0, from_self=True, sent_elsewhere=True)
    await store_msg(store, typed, "th-old")
    trigger = msg(G1, "m1", "u1", "那要提前准备问题吗", 100.0, reply_to="q1", addressed=True)
    built, _prompt = await rt.prepare(
        trigger, chat=G1, now=100.0, reason="forced", conversation_thread_id="th-new"
    )
    assert built.packet.user_input.attached_context == f"{SENT_ELSEWHERE_LABEL} 名10000: 今晚八点我亲自答疑"


@pytest.mark.asyncio
async def test_a_reply_to_a_message_already_in_the_dialogue_is_not_quoted_twice(store: Store) -> None:
    rt = runtime(store)
    first = msg(G1, "q1", "u5", "明天十点开会", 0.0)
    await store_msg(store, first, "th-1")
    trigger = msg(G1, "m1", "u1", "灰风这个会要准备什么", 10.0, reply_to="q1", addressed=True)
    built, prompt = await rt.prepare(
        trigger, chat=G1, now=10.0, reason="forced", conversation_thread_id="th-1"
    )
    assert [t.message_id for t in built.packet.session.recent_dialogue] == ["q1"]
    assert built.packet.user_input.attached_context is None
    assert sum("明天十点开会" in m["content"] for m in prompt.as_messages()) == 1


def test_the_recent_buffer_is_bounded_per_chat() -> None:
    recent = RecentBuffer(size=3)
    for i in range(5):
        recent.add(StoredMessage("group:1", f"m{i}", "u", "u", float(i), "x"))
    recent.add(StoredMessage("group:2", "n", "u", "u", 0.0, "y"))
    assert [m.message_id for m in recent.recent("group:1")] == ["m2", "m3", "m4"]
    assert recent.recent("group:9") == ()
    assert recent.statistics() == RecentBufferStatistics(chats=2, messages=4, size=3)


@pytest.mark.asyncio
async def test_a_proactive_cue_never_opens_a_thread_of_its_own(store: Store) -> None:
    rt = runtime(store)
    trip = await rt.resolver.create(G1.chat_id, "杭州周末游", now=0.0, tags=("西湖",))
    built, _ = await rt.prepare(None, chat=G1, now=10.0, reason="proactive", cue="问问大家西湖去过没有")
    assert built.packet.thread.thread_id == trip.id
    quiet, _ = await rt.prepare(
        None, chat=G1, now=20.0, reason="proactive", cue="群里好久没人说话了，分享一首新歌"
    )
    assert quiet.resolution.rule.value == "fallback"
    assert quiet.packet.thread.thread_type == "casual"
    titles = {t.title for t in await store.list_topic_threads(chat_id=G1.chat_id)}
    assert not any("新歌" in title for title in titles)
