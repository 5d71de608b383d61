"""A build whose writes go on behind its packet (``defer_writes``), on every store backend: the same
packet as a build that writes first, a chat's next build reading what the last one wrote, and the
rows a build just decided never read back from the store."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime.config.store import StoreConfig
from runtime.context.setup import ContextRuntime
from runtime.store.backends import open_store
from runtime.store.protocol import Store
from runtime.store.records import OPEN_SESSION_STATES
from tests.context.test_builder import G1, msg, runtime, store_msg

pytestmark = pytest.mark.asyncio

WATCHED = (
    "conversation_messages",
    "list_handoffs",
    "list_memories",
    "list_sessions",
    "list_tasks",
    "upsert_session",
    "upsert_topic_thread",
)


class Watched:
    """The store, its calls counted; its topic-thread and session writes wait for ``gate``."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()
        self.gate = anyio.Event()
        self.gate.set()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name not in WATCHED:
            return attr
        return self._watched(name, attr)

    def _watched(self, name: str, call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            if name.startswith("upsert_"):
                await self.gate.wait()
            return await call(*args, **kwargs)

        return counted


def watched_runtime(store: Store) -> tuple[ContextRuntime, Watched]:
    watched = Watched(store)
    return runtime(watched), watched


async def test_a_deferred_build_makes_the_packet_a_build_that_writes_first_makes(tmp_path: Path) -> None:
    script = [
        msg(G1, "m1", "u1", "灰风，帮我排一下杭州三日游的路线", 0.0, addressed=True),
        msg(G1, "m2", "u1", "灰风，杭州路线第二天呢", 30.0, addressed=True),
        msg(G1, "m3", "u2", "哈哈哈", 40.0, addressed=True),
        msg(G1, "m4", "u1", "灰风，杭州路线第三天呢", 4_000.0, addressed=True),  # the session timed out
    ]
    sent: dict[bool, list[list[dict[str, str]]]] = {}
    rows: dict[bool, list[tuple[Any, ...]]] = {}
    for deferred in (False, True):
        store = await open_store(StoreConfig(), tmp_path / str(deferred))
        try:
            rt = runtime(store)
            sent[deferred] = []
            for m in script:
                await store_msg(store, m, "th-1")
                built, prompt = await rt.prepare(
                    m,
                    chat=G1,
                    now=m.time,
                    reason="forced",
                    conversation_thread_id="th-1",
                    defer_writes=deferred,
                )
                if deferred:
                    assert built.writes is not None
                built = await rt.builder.settle(built)
                await rt.builder.record_reply(built, f"好的{m.message_id}", now=m.time + 1)
                sent[deferred].append(prompt.as_messages())
            rows[deferred] = [
                (s.id, s.topic_thread_id, s.state, s.recent_dialogue, s.updated_at)
                for s in await store.list_sessions()
            ] + [(t.id, t.title, t.updated_at, t.status) for t in await store.list_topic_threads()]
        finally:
            await store.close()
    assert sent[True] == sent[False]
    assert rows[True] == rows[False]


async def test_a_chats_next_build_waits_for_the_writes_of_its_last_one(store: Store) -> None:
    rt, watched = watched_runtime(store)
    watched.gate = anyio.Event()  # the writes wait
    first = msg(G1, "m1", "u1", "灰风，帮我排一下杭州三日游的路线", 0.0, addressed=True)
    built, _ = await rt.prepare(
        first, chat=G1, now=0.0, reason="forced", conversation_thread_id="th-1", defer_writes=True
    )
    assert built.session is not None
    assert built.session_created
    assert await store.list_sessions() == [], "the packet is out before its session is written"
    again = msg(G1, "m2", "u1", "灰风，杭州路线第二天呢", 30.0, addressed=True)
    later: list[Any] = []

    async def next_build() -> None:
        later.append(
            await rt.prepare(
                again, chat=G1, now=30.0, reason="forced", conversation_thread_id="th-1", defer_writes=True
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(next_build)
        await anyio.sleep(0.2)
        assert later == [], "the next build read the store before the last one's writes were in"
        watched.gate.set()
    ((built2, _),) = later
    built2 = await rt.builder.settle(built2)
    await rt.builder.settle(built)
    assert built2.session is not None
    assert built2.session.id == built.session.id, "a second session was opened beside the first"
    (stored,) = await store.list_sessions(states=OPEN_SESSION_STATES)
    assert stored.recent_dialogue == (
        "名u1: 灰风，帮我排一下杭州三日游的路线",
        "名u1: 灰风，杭州路线第二天呢",
    )


async def test_a_build_never_reads_back_the_rows_it_just_decided(store: Store) -> None:
    rt, watched = watched_runtime(store)
    first = msg(G1, "m1", "u1", "灰风，帮我排一下杭州三日游的路线", 0.0, addressed=True)
    built, _ = await rt.prepare(first, chat=G1, now=0.0, reason="forced", conversation_thread_id="th-1")
    assert built.resolution is not None
    assert built.resolution.created
    # A thread this turn made has no session, handoff, task or memory; a chat with no thread has no
    # conversation to look one up by. Only the dialogue reads the conversation.
    for none in ("list_sessions", "list_handoffs", "list_tasks", "list_memories"):
        assert watched.calls[none] == 0, (none, watched.calls)
    assert watched.calls["conversation_messages"] == 1

    watched.calls.clear()
    again = msg(G1, "m2", "u1", "灰风，杭州路线第二天呢", 30.0, addressed=True)
    built2, _ = await rt.prepare(again, chat=G1, now=30.0, reason="forced", conversation_thread_id="th-1")
    assert built2.resolution is not None
    assert built2.resolution.thread.id == built.resolution.thread.id
    # The thread's tasks once: read for the resolver's profile of it, and shown by the thread slot
    # and retrieval from that same read.
    assert watched.calls["list_tasks"] == 1, watched.calls
