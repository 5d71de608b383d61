"""The follow-up and memory-hook life sources over a real SQLite store, and the director's rules for
their grounds: what is proposed, when, how often, and what a faulty store costs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import pytest_asyncio

from runtime.config.store import StoreConfig
from runtime.extensions import ChatActivityLog, ExtensionRegistry, LifeDirector, LifeSettings, Scope
from runtime.extensions.chat_activity import restore_activity
from runtime.extensions.follow_ups import FollowUps
from runtime.extensions.memory_hooks import HOOK_TAG, MemoryHooks, hook_mark
from runtime.extensions.spec import Grounds, LifeContext, LifeSourceSpec
from runtime.kernel.clock import ManualClock
from runtime.kernel.kernel import Kernel
from runtime.store.backends import open_store
from runtime.store.errors import StoreError
from runtime.store.protocol import MemoryScope, Store
from runtime.store.records import Memory, ScopeType, StoredMessage
from tests.extensions.conftest import said

pytestmark = pytest.mark.asyncio

ZONE = "Asia/Shanghai"
GROUP = "group:1"
DAY = 86_400.0


def at(day: int, hour: int, minute: int = 0) -> float:
    """``hour:minute`` local on 2026-03-(2 + day), a Monday to start."""
    return datetime(2026, 3, 2 + day, hour, minute, tzinfo=ZoneInfo(ZONE)).timestamp()


def tick(now: float, *chats: str, quiet: bool = False) -> LifeContext:
    return LifeContext(now=now, active_chats=(), quiet=quiet, known_chats=chats)


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    backend = await open_store(StoreConfig(backend="sqlite"), tmp_path)
    try:
        yield backend
    finally:
        await backend.close()


class FailingWrites:
    """The store, but every write fails (a locked or full database)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def upsert_memory(self, memory: Memory) -> None:
        raise StoreError("database is locked")

    async def delete_memory(self, memory_id: str) -> bool:
        raise StoreError("database is locked")

    async def get_memory(self, memory_id: str) -> Memory | None:
        return await self._store.get_memory(memory_id)

    async def list_memories(
        self,
        *,
        scopes: Collection[MemoryScope],
        memory_types: Collection[str] | None = None,
        tags: Collection[str] | None = None,
        since: float | None = None,
        min_importance: float | None = None,
        limit: int | None = None,
    ) -> list[Memory]:
        return await self._store.list_memories(scopes=scopes, memory_types=memory_types, tags=tags)


def book(store: object, *, per_chat: int = 3, grace: float = 12 * 3_600) -> FollowUps:
    return FollowUps(store, zone=ZONE, per_chat=per_chat, grace=grace)  # type: ignore[arg-type]


# -- follow-ups -------------------------------------------------------------------------------


async def test_a_follow_up_is_proposed_once_when_due_and_read_back_after_a_restart(store: Store) -> None:
    first = book(store)
    made = await first.add("fu-1", GROUP, "周末去哪玩", now=at(0, 10), due=at(2, 15), thread_id="th-1")
    assert made is not None
    assert await first.poll(tick(at(2, 14, 50), GROUP)) == []  # not before its time

    after_restart = book(store)  # a new process: nothing in memory, the store has it
    assert await after_restart.poll(tick(at(2, 14, 50), GROUP)) == []
    assert after_restart.pending(GROUP) == 1
    (proposal,) = await after_restart.poll(tick(at(2, 15), GROUP))
    assert proposal.grounds is Grounds.FOLLOW_UP
    assert proposal.chat_id == GROUP
    assert proposal.thread_id == "th-1"
    assert "周末去哪玩" in proposal.reason
    assert "“周末去哪玩”" in str(proposal.payload["cue"])
    assert "03-02 10:00" in str(proposal.payload["cue"])  # when it was promised
    assert await after_restart.poll(tick(at(2, 15, 10), GROUP)) == []  # once
    assert await book(store).poll(tick(at(2, 15, 20), GROUP)) == []  # and gone from the store
    assert await store.list_memories(scopes=[(ScopeType.CHAT, GROUP)]) == []


async def test_quiet_hours_hold_a_follow_up_until_they_end_and_a_stale_one_is_dropped(store: Store) -> None:
    follow_ups = book(store, grace=6 * 3_600)
    await follow_ups.add("fu-night", GROUP, "带伞", now=at(0, 20), due=at(1, 2), thread_id=None)
    await follow_ups.add("fu-stale", "group:2", "旧事", now=at(0, 9), due=at(0, 10), thread_id=None)
    assert await follow_ups.poll(tick(at(1, 2), GROUP, quiet=True)) == []
    (proposal,) = await follow_ups.poll(tick(at(1, 8), GROUP, "group:2"))
    assert proposal.chat_id == GROUP
    assert follow_ups.pending("group:2") == 0  # 22 hours past its time, beyond the grace: dropped
    remaining = await store.list_memories(scopes=[(ScopeType.CHAT, "group:2")])
    assert remaining == []


async def test_one_follow_up_per_chat_per_tick_and_a_bounded_count(store: Store) -> None:
    follow_ups = book(store, per_chat=2)
    await follow_ups.add("fu-a", GROUP, "第一件", now=at(0, 9), due=at(0, 10), thread_id=None)
    await follow_ups.add("fu-b", GROUP, "第二件", now=at(0, 9), due=at(0, 10), thread_id=None)
    assert await follow_ups.count(GROUP) == 2
    first = await follow_ups.poll(tick(at(0, 10), GROUP))
    second = await follow_ups.poll(tick(at(0, 10, 1), GROUP))
    assert [p.reason for p in first + second] == ["你说过会回来跟进：第一件", "你说过会回来跟进：第二件"]


async def test_a_follow_up_the_store_cannot_take_is_not_promised(store: Store) -> None:
    follow_ups = book(FailingWrites(store))
    assert await follow_ups.add("fu-x", GROUP, "查一下", now=at(0, 9), due=at(0, 10), thread_id=None) is None
    assert follow_ups.pending(GROUP) == 0
    assert await follow_ups.poll(tick(at(0, 11), GROUP)) == []


# -- memory hooks -----------------------------------------------------------------------------


def memory(
    content: str, *, scope: tuple[ScopeType, str] = (ScopeType.CHAT, GROUP), chat: str = GROUP
) -> Memory:
    return Memory(
        id=f"mem-{abs(hash((content, scope, chat)))}",
        scope_type=scope[0],
        scope_id=scope[1],
        memory_type="note",
        content=content,
        importance=0.5,
        created_at=at(0, 10),
        updated_at=at(0, 10),
        extra={"source_chat": chat},
    )


async def test_a_memory_hook_fires_on_its_day_after_the_quiet_hours_once_even_after_a_restart(
    store: Store,
) -> None:
    exam = hook_mark(memory("阿明3月5日考试"), at(0, 10), ZONE)
    assert HOOK_TAG in exam.tags
    assert exam.extra["hook_day"] == "2026-03-05"
    await store.upsert_memory(exam)
    hooks = MemoryHooks(store, zone=ZONE)
    hooks.note(exam)
    assert await hooks.poll(tick(at(2, 23, 50), GROUP)) == []  # the day before
    assert await hooks.poll(tick(at(3, 0, 10), GROUP, quiet=True)) == []  # its day, but quiet
    (proposal,) = await hooks.poll(tick(at(3, 8), GROUP))
    assert proposal.grounds is Grounds.MEMORY_HOOK
    assert "阿明3月5日考试" in str(proposal.payload["cue"])
    assert await hooks.poll(tick(at(3, 9), GROUP)) == []  # once
    restarted = MemoryHooks(store, zone=ZONE)
    assert await restarted.poll(tick(at(3, 10), GROUP)) == []  # the fired mark is in the store
    stored = await store.get_memory(exam.id)
    assert stored is not None
    assert stored.extra["hook_fired"] == at(3, 8)


async def test_a_hook_whose_day_passed_unseen_is_let_go(store: Store) -> None:
    trip = hook_mark(memory("阿明明天出发"), at(0, 10), ZONE)
    await store.upsert_memory(trip)
    hooks = MemoryHooks(store, zone=ZONE)  # the bot was down all Tuesday
    assert await hooks.poll(tick(at(2, 9), GROUP)) == []
    assert hooks.pending(GROUP) == 0


async def test_a_hook_is_heard_only_where_its_memory_may_be_seen() -> None:
    # a memory about a user, written in a group: seen only in their private chat, so no hook
    in_group = hook_mark(memory("阿明3月5日考试", scope=(ScopeType.USER, "42")), at(0, 10), ZONE)
    assert HOOK_TAG not in in_group.tags
    in_private = hook_mark(
        memory("阿明3月5日考试", scope=(ScopeType.USER, "42"), chat="private:42"), at(0, 10), ZONE
    )
    assert in_private.extra["hook_chat"] == "private:42"
    # no date, or an ambiguous one: no hook
    for text in ("阿明喜欢吃辣", "阿明3月5日或3月6日考试", "每周三开会"):
        assert HOOK_TAG not in hook_mark(memory(text), at(0, 10), ZONE).tags


async def test_a_hook_the_store_cannot_mark_fired_is_not_proposed(store: Store) -> None:
    exam = hook_mark(memory("阿明3月5日考试"), at(0, 10), ZONE)
    await store.upsert_memory(exam)
    hooks = MemoryHooks(FailingWrites(store), zone=ZONE)  # type: ignore[arg-type]
    assert await hooks.poll(tick(at(3, 8), GROUP)) == []  # no mark, no proposal: never twice


# -- the director and the restored activity ----------------------------------------------------


async def test_follow_up_grounds_reach_a_chat_silent_for_days_an_open_question_does_not(
    registry: ExtensionRegistry, sink: Kernel, chats: ChatActivityLog, clock: ManualClock
) -> None:
    settings = LifeSettings(quiet_start=None, quiet_end=None)
    director = LifeDirector(registry, sink, chats, clock=clock, settings=settings)
    chats.note(said(clock, "1"))
    clock.advance(3 * DAY)
    now = clock.now()
    assert director.allowed(GROUP, now, grounds=Grounds.FOLLOW_UP).allowed
    assert director.allowed(GROUP, now, grounds=Grounds.MEMORY_HOOK).allowed
    assert not director.allowed(GROUP, now, grounds=Grounds.OPEN_QUESTION).allowed
    assert not director.allowed(GROUP, now).allowed
    clock.advance(5 * DAY)  # beyond dated_within (7 days)
    assert not director.allowed(GROUP, clock.now(), grounds=Grounds.FOLLOW_UP).allowed


async def test_a_tick_reports_grounds_and_names_the_silent_chats_it_had_nothing_for(
    registry: ExtensionRegistry, sink: Kernel, chats: ChatActivityLog, clock: ManualClock, store: Store
) -> None:
    settings = LifeSettings(quiet_start=None, quiet_end=None)
    director = LifeDirector(registry, sink, chats, clock=clock, settings=settings)
    follow_ups = book(store)
    registry.register_life_source(Scope("t"), LifeSourceSpec("follow_ups", follow_ups.poll, 1.0))
    chats.note(said(clock, "1"))
    chats.note(said(clock, "2"))
    await follow_ups.add("fu-1", GROUP, "查一下", now=clock.now(), due=clock.now() + 2 * DAY, thread_id=None)
    clock.advance(2 * DAY)
    report = await director.tick()
    assert report.grounds == ((GROUP, "follow_up"),)
    assert len(report.emitted) == 1
    assert dict(report.silent) == {"group:2": "nothing to say"}  # silent two days, nothing due
    note = director.note(GROUP)
    assert note is not None
    assert note.grounds == "follow_up"


async def test_chat_activity_is_restored_over_the_grounds_window(store: Store) -> None:
    def stored(chat: str, when: float, *, own: bool = False) -> StoredMessage:
        return StoredMessage(
            chat_id=chat,
            message_id=f"m{when}",
            sender_id="10001" if own else "42",
            sender_name="x",
            time=when,
            text="hi",
            from_self=own,
        )

    await store.append_messages(
        [stored(GROUP, at(0, 10)), stored(GROUP, at(0, 11), own=True), stored("group:9", at(0, 10) - 9 * DAY)]
    )
    activity = ChatActivityLog()
    assert await restore_activity(activity, store, since=at(3, 10) - 7 * DAY) == 1
    assert activity.last_activity(GROUP) == at(0, 10)  # the bot's own message does not count
    assert activity.last_activity("group:9") is None  # older than the window


async def test_a_replaced_memory_keeps_its_fired_mark_through_hook_of(store: Store) -> None:
    exam = hook_mark(memory("阿明3月5日考试"), at(0, 10), ZONE)
    fired = replace(exam, extra={**exam.extra, "hook_fired": at(3, 8)})
    hooks = MemoryHooks(store, zone=ZONE)
    hooks.note(fired)
    assert hooks.pending(GROUP) == 0
