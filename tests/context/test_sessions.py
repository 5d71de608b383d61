"""SessionManager and HandoffManager: the lifecycle of design/000 §8, the handoff N → N+1 of §9."""

from __future__ import annotations

import functools
import json
from collections import Counter
from typing import Any

import anyio
import pytest

from runtime.context.errors import IllegalSessionTransitionError, UnknownSessionError
from runtime.context.handoffs import (
    HandoffDigest,
    HandoffManager,
    HandoffRequest,
    fallback_digest,
    parse_digest,
)
from runtime.context.sessions import CloseReason, InterruptKind, SessionManager, SessionSettings
from runtime.context.tasks import TaskBook
from runtime.kernel.message import SENT_ELSEWHERE_LABEL
from runtime.store.protocol import Store
from runtime.store.records import SessionState, StoredMessage, TaskStatus, TopicThread

G1, G2 = "group:1", "group:2"


class ScriptedSummarizer:
    """Answers with a fixed digest, or fails / hangs as told."""

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.requests: list[HandoffRequest] = []

    async def summarize_handoff(self, request: HandoffRequest) -> HandoffDigest:
        self.requests.append(request)
        if self.mode == "fail":
            raise RuntimeError("model unavailable")
        if self.mode == "hang":
            await anyio.sleep(10)
        if self.mode == "empty":
            return HandoffDigest(summary="  ")
        return HandoffDigest(
            summary="已完成 architecture-v2 主体",
            unfinished_items=("定义 slot 结构",),
            risks=("不要忽略 thread/session 区分",),
            resume_suggestion="优先完成 context-runtime.md",
        )


async def thread(store: Store, tid: str = "topic-1", chats: tuple[str, ...] = (G1,)) -> TopicThread:
    t = TopicThread(
        id=tid,
        title="灰风系统架构设计",
        type="design",
        summary="",
        created_at=0.0,
        updated_at=0.0,
        chat_ids=chats,
    )
    await store.upsert_topic_thread(t)
    return t


def manager(
    store: Store, summarizer: ScriptedSummarizer | None = None, timeout: float = 5.0
) -> SessionManager:
    handoffs = HandoffManager(store, summarizer=summarizer, timeout=timeout)
    return SessionManager(store, handoffs, settings=SessionSettings(idle_after=300.0, idle_timeout=1800.0))


@pytest.mark.asyncio
async def test_a_turn_reuses_the_open_session_and_records_dialogue(store: Store) -> None:
    t = await thread(store)
    sessions = manager(store)
    first = await sessions.open(t, G1, now=0.0, screen_context={"surface": "group", "chat_name": "开发群"})
    assert first.created
    assert first.session.state is SessionState.ACTIVE
    await sessions.record_turn(
        first.session.id, now=10.0, dialogue=("甲: 写文档",), actions=("回复",), resume_point="写第三节"
    )
    again = await sessions.open(t, G1, now=20.0)
    assert again.session.id == first.session.id
    assert not again.created
    assert again.session.recent_dialogue == ("甲: 写文档",)
    assert again.session.resume_point == "写第三节"
    assert again.session.screen_context == {"surface": "group", "chat_name": "开发群"}


@pytest.mark.asyncio
async def test_the_same_thread_in_another_chat_has_its_own_session(store: Store) -> None:
    t = await thread(store, chats=(G1, G2))
    sessions = manager(store)
    a = await sessions.open(t, G1, now=0.0)
    b = await sessions.open(t, G2, now=1.0)
    assert a.session.id != b.session.id


@pytest.mark.asyncio
async def test_idle_then_timeout_closes_with_transcript_and_handoff(store: Store) -> None:
    t = await thread(store)
    sessions = manager(store)
    opened = await sessions.open(t, G1, now=0.0)
    await store.append_messages(
        [
            StoredMessage(G1, "m1", "u1", "甲", 5.0, "先写 slot 结构", topic_thread_id=t.id),
            StoredMessage(
                G1, "m2", "bot", "灰风", 6.0, "好，我先列字段", topic_thread_id=t.id, from_self=True
            ),
            StoredMessage(G1, "m3", "u2", "乙", 7.0, "另一个话题", topic_thread_id="topic-other"),
            StoredMessage(  # the account's owner, typing on another device
                G1,
                "m4",
                "10000",
                "灰风",
                8.0,
                "号主补充一句",
                topic_thread_id=t.id,
                from_self=True,
                sent_elsewhere=True,
            ),
        ]
    )
    await sessions.record_turn(
        opened.session.id, now=6.0, dialogue=("甲: 先写 slot 结构", "灰风: 好，我先列字段")
    )
    assert await sessions.sweep(now=400.0) == []
    assert (await sessions.get(opened.session.id)).state is SessionState.IDLE
    closed = await sessions.sweep(now=6.0 + 1801.0)
    assert [c.session.id for c in closed] == [opened.session.id]
    assert closed[0].session.state is SessionState.HANDOFF_WRITTEN
    assert closed[0].session.ended_at == 6.0 + 1801.0
    transcript = await store.get_transcript(opened.session.id)
    assert transcript is not None
    assert "甲: 先写 slot 结构" in transcript.content
    assert "(bot) 灰风: 好，我先列字段" in transcript.content
    assert f"{SENT_ELSEWHERE_LABEL} 灰风: 号主补充一句" in transcript.content
    assert "另一个话题" not in transcript.content
    assert closed[0].handoff.written_by == "fallback"
    assert "好，我先列字段" in closed[0].handoff.summary


class CountedReads:
    """The store, with how often each of its methods was called."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted


@pytest.mark.asyncio
async def test_a_sweep_reads_again_only_the_sessions_it_changes(store: Store) -> None:
    """The sweep runs every minute over every open session of every chat: the ones still talking cost
    it no read of their own, so its work follows the silent sessions, not how many chats are busy."""
    t = await thread(store)
    counted = CountedReads(store)
    sessions = manager(counted)  # type: ignore[arg-type]  # the store's methods, counted
    quiet = await sessions.open(t, "group:quiet", now=0.0)
    gone = await sessions.open(t, "group:gone", now=-2_000.0)
    talking = [(await sessions.open(t, f"group:{n}", now=1_000.0)).session.id for n in range(40)]

    counted.calls.clear()
    closed = await sessions.sweep(now=1_010.0)

    assert [c.session.id for c in closed] == [gone.session.id]
    states = {s.id: s.state for s in await store.list_sessions()}
    assert states[quiet.session.id] is SessionState.IDLE
    assert {states[session_id] for session_id in talking} == {SessionState.ACTIVE}
    assert counted.calls["list_sessions"] == 1
    assert counted.calls["get_session"] == 2  # the quiet one and the gone one, under their locks


@pytest.mark.asyncio
async def test_handoff_of_session_n_reaches_session_n_plus_1_of_the_same_thread(store: Store) -> None:
    t = await thread(store)
    other = await thread(store, "topic-2")
    summarizer = ScriptedSummarizer()
    sessions = manager(store, summarizer)
    first = await sessions.open(t, G1, now=0.0)
    await sessions.record_turn(first.session.id, now=1.0, dialogue=("甲: 写完 v2 了",))
    closed = await sessions.close(first.session.id, now=2.0, reason=CloseReason.MANUAL)
    assert closed.handoff.written_by == "model"
    assert summarizer.requests[0].dialogue == ("甲: 写完 v2 了",)
    # Another thread's new session gets nothing; the same thread's next session gets the handoff.
    unrelated = await sessions.open(other, G1, now=3.0)
    assert unrelated.handoff is None
    second = await sessions.open(t, G1, now=4.0)
    assert second.created
    assert second.handoff is not None
    assert second.handoff.id == closed.handoff.id
    assert second.handoff.to_session_id == second.session.id
    assert await sessions.handoffs.for_session(second.session) == second.handoff
    assert second.handoff.resume_suggestion == "优先完成 context-runtime.md"
    # Delivered once: session N+2 does not receive N's handoff again.
    await sessions.close(second.session.id, now=5.0)
    third = await sessions.open(t, G1, now=6.0)
    assert third.handoff is not None
    assert third.handoff.from_session_id == second.session.id


@pytest.mark.asyncio
async def test_a_handoff_never_crosses_chats(store: Store) -> None:
    t = await thread(store, chats=(G1, G2))
    sessions = manager(store)
    first = await sessions.open(t, G1, now=0.0)
    await sessions.close(first.session.id, now=1.0)
    in_g2 = await sessions.open(t, G2, now=2.0)
    assert in_g2.handoff is None


@pytest.mark.parametrize("mode", ["fail", "hang", "empty"])
@pytest.mark.asyncio
async def test_a_failing_model_falls_back_to_the_deterministic_digest(store: Store, mode: str) -> None:
    t = await thread(store)
    sessions = manager(store, ScriptedSummarizer(mode), timeout=0.05)
    opened = await sessions.open(t, G1, now=0.0)
    await sessions.record_turn(
        opened.session.id, now=1.0, dialogue=("甲: 继续写",), resume_point="写 retrieval 一节"
    )
    closed = await sessions.close(opened.session.id, now=2.0)
    assert closed.handoff.written_by == "fallback"
    assert closed.handoff.resume_suggestion == "写 retrieval 一节"
    assert sessions.handoffs.statistics().model_failures == 1


@pytest.mark.asyncio
async def test_fallback_digest_carries_tasks_interruptions_and_resume_point() -> None:
    request = HandoffRequest(
        session_id="s1",
        topic_thread_id="t1",
        thread_title="灰风系统架构设计",
        chat_id=G1,
        dialogue=("甲: a", "乙: b", "甲: c", "乙: d"),
        open_tasks=("写 context-runtime.md",),
        interruptions=("tool：搜索超时",),
        resume_point=None,
    )
    digest = fallback_digest(request)
    assert digest == fallback_digest(request)  # deterministic
    assert "甲: a" not in digest.summary
    assert "乙: d" in digest.summary
    assert digest.unfinished_items == ("写 context-runtime.md",)
    assert any("搜索超时" in r for r in digest.risks)
    assert digest.resume_suggestion == "写 context-runtime.md"


def test_parse_digest_accepts_the_seed_format_and_refuses_junk() -> None:
    digest = parse_digest(
        json.dumps({"summary": "进度", "unfinished_items": ["a", " "], "risks": [], "resume_suggestion": "b"})
    )
    assert digest == HandoffDigest("进度", ("a",), (), "b")
    for junk in ("not json", "[]", json.dumps({"summary": ""}), json.dumps({"unfinished_items": ["x"]})):
        with pytest.raises(ValueError, match="handoff digest"):
            parse_digest(junk)


@pytest.mark.asyncio
async def test_interruptions_are_recorded_and_the_next_turn_resumes(store: Store) -> None:
    t = await thread(store)
    sessions = manager(store)
    opened = await sessions.open(t, G1, now=0.0)
    interrupted = await sessions.interrupt(
        opened.session.id, now=1.0, kind=InterruptKind.TOOL, note="搜索超时", resume_point="重试搜索"
    )
    assert interrupted.state is SessionState.INTERRUPTED
    assert interrupted.interruptions[-1] == {"kind": "tool", "at": 1.0, "note": "搜索超时"}
    resumed = await sessions.open(t, G1, now=2.0)
    assert resumed.session.id == opened.session.id
    assert resumed.resumed
    assert resumed.session.state is SessionState.ACTIVE
    assert resumed.session.resume_point == "重试搜索"


@pytest.mark.asyncio
async def test_restart_marks_open_sessions_interrupted_and_resumes_or_closes_them(store: Store) -> None:
    t = await thread(store)
    before = manager(store)
    recent = await before.open(t, G1, now=0.0)
    t2 = await thread(store, "topic-2")
    old = await before.open(t2, G1, now=0.0)
    await before.record_turn(recent.session.id, now=100.0)
    # The process dies; a new manager starts over the same store.
    after = manager(store)
    assert await after.mark_open_sessions_interrupted(now=200.0) == 2
    stored = await store.get_session(recent.session.id)
    assert stored is not None
    assert stored.state is SessionState.INTERRUPTED
    assert stored.interruptions[-1]["kind"] == "process_exit"
    # A turn soon after resumes the interrupted session; one long after closes it and starts anew.
    again = await after.open(t, G1, now=300.0)
    assert (again.session.id, again.resumed) == (recent.session.id, True)
    fresh = await after.open(t2, G1, now=5000.0)
    assert fresh.created
    assert fresh.closed_previous is not None
    assert fresh.closed_previous.session.id == old.session.id
    assert fresh.handoff is not None
    assert fresh.handoff.from_session_id == old.session.id


@pytest.mark.asyncio
async def test_shutdown_closes_everything_and_closed_sessions_stay_closed(store: Store) -> None:
    t = await thread(store)
    sessions = manager(store, ScriptedSummarizer())
    opened = await sessions.open(t, G1, now=0.0)
    closed = await sessions.close_all(now=10.0)
    assert [c.session.state for c in closed] == [SessionState.HANDOFF_WRITTEN]
    assert closed[0].handoff.written_by == "fallback"  # shutdown does not wait for a model
    with pytest.raises(IllegalSessionTransitionError):
        await sessions.record_turn(opened.session.id, now=11.0)
    with pytest.raises(UnknownSessionError):
        await sessions.get("nope")
    assert dict(sessions.statistics().closed) == {"shutdown": 1}


@pytest.mark.asyncio
async def test_tasks_are_created_updated_and_concluded_under_a_thread(store: Store) -> None:
    t = await thread(store)
    book = TaskBook(store)
    task = await book.create(t.id, "写 context-runtime.md", now=1.0)
    await book.update(task.id, now=2.0, status=TaskStatus.IN_PROGRESS)
    done = await book.conclude(task.id, "已写完，放在 docs/", now=3.0)
    assert (done.status, done.conclusion) == (TaskStatus.DONE, "已写完，放在 docs/")
    assert [x.id for x in await book.for_thread(t.id)] == [task.id]
    assert book.statistics().concluded == 1
    with pytest.raises(ValueError, match="done or cancelled"):
        await book.conclude(task.id, "x", now=4.0, status=TaskStatus.OPEN)


@pytest.mark.asyncio
async def test_a_slow_handoff_model_holds_up_no_other_chat_and_no_users_turn(store: Store) -> None:
    t1 = await thread(store, "topic-1", chats=(G1,))
    t2 = await thread(store, "topic-2", chats=(G2,))
    slow = ScriptedSummarizer("hang")  # answers after 10 s; the timeout below is 5 s
    sessions = manager(store, slow, timeout=5.0)
    stale = await sessions.open(t1, G1, now=0.0)
    await sessions.open(t2, G2, now=0.0)
    async with anyio.create_task_group() as group:
        group.start_soon(functools.partial(sessions.close, stale.session.id, now=1.0))  # G1's handoff...
        await anyio.sleep(0.05)
        with anyio.fail_after(1.0):  # ...while a turn in G2 goes through at once
            again = await sessions.open(t2, G2, now=10.0)
        assert not again.created
        group.cancel_scope.cancel()

    # A turn that finds its session silent past the timeout closes it without asking the model.
    other = await thread(store, "topic-3", chats=(G1,))
    old = await sessions.open(other, G1, now=0.0)
    asked = len(slow.requests)
    with anyio.fail_after(1.0):
        fresh = await sessions.open(other, G1, now=5000.0)
    assert fresh.closed_previous is not None
    assert fresh.closed_previous.session.id == old.session.id
    assert fresh.closed_previous.handoff.written_by == "fallback"
    assert len(slow.requests) == asked


@pytest.mark.asyncio
async def test_a_turn_never_revives_a_session_closed_meanwhile(store: Store) -> None:
    t = await thread(store)
    sessions = manager(store)
    opened = await sessions.open(t, G1, now=0.0)
    await sessions.sweep(now=5000.0)
    with pytest.raises(IllegalSessionTransitionError):
        await sessions.record_turn(opened.session.id, now=5001.0, dialogue=("甲: 还在吗",))
    stored = await store.get_session(opened.session.id)
    assert stored is not None
    assert stored.state is SessionState.HANDOFF_WRITTEN


@pytest.mark.asyncio
async def test_what_a_session_did_not_get_to_is_handed_on_again(store: Store) -> None:
    t = await thread(store)
    sessions = manager(store)
    first = await sessions.open(t, G1, now=0.0)
    await sessions.record_turn(
        first.session.id, now=1.0, dialogue=("甲: 先定 slot",), resume_point="定义 retrieval 策略"
    )
    await sessions.close(first.session.id, now=2.0)
    second = await sessions.open(t, G1, now=3.0)
    assert second.handoff is not None
    closed = await sessions.close(second.session.id, now=4.0)  # nothing happened in between
    assert "定义 retrieval 策略" in closed.handoff.unfinished_items
    assert closed.handoff.resume_suggestion == "定义 retrieval 策略"
    assert "没有新进展" in closed.handoff.summary
    third = await sessions.open(t, G1, now=5.0)
    assert third.handoff is not None
    assert third.handoff.resume_suggestion == "定义 retrieval 策略"
