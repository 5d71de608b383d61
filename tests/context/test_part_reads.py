"""The reads of a packet's parts, on every store backend: an ongoing session's handoff is read once,
not on every turn, the memories' full-text searches of a turn are one store call, the thread's tasks
the resolver read are not read again, and what needs no scope is read beside what does; the packets
and rows are the same as when every part is read from the store each time."""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime.config.store import StoreConfig
from runtime.context.builder import BuiltContext, ContextBuilder
from runtime.context.handoffs import HandoffManager
from runtime.context.retrieval import RetrievalEngine, RetrievalQuery
from runtime.context.setup import ContextRuntime
from runtime.kernel.message import ChatMessage
from runtime.store.backends import open_store, registered_backends
from runtime.store.protocol import Store
from runtime.store.records import Memory, MemoryHit, ScopeType, Task
from runtime.store.roles import MemoryScope
from tests.conftest import backend_ready
from tests.context.test_builder import G1, G2, msg, runtime, store_msg

pytestmark = pytest.mark.asyncio

MEMORY_SEARCHES = ("search_memories", "search_memories_each")
TASKS_OF = ContextBuilder._tasks_of


class Counted:
    """The store, every call of its coroutine methods counted by name."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not inspect.iscoroutinefunction(attr):
            return attr
        return self._counted(name, attr)

    def _counted(self, name: str, call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return await call(*args, **kwargs)

        return counted


class OneByOne(Counted):
    """The store searching memories one word per call, as every search was made before."""

    async def search_memories_each(
        self, queries: Sequence[str], *, scopes: Collection[MemoryScope], limit: int = 10
    ) -> list[list[MemoryHit]]:
        search = self.__getattr__("search_memories")
        return [await search(q, scopes=scopes, limit=limit) for q in queries]


async def plant(store: Store) -> None:
    for n, content in enumerate(
        ("杭州路线第一天去西湖", "杭州三日游住在龙井村", "路线第二天去灵隐寺", "第三天回上海")
    ):
        await store.upsert_memory(
            Memory(f"mem{n}", ScopeType.CHAT, G1.chat_id, "fact", content, 0.5 + n / 10, float(n), float(n))
        )


async def turn(
    rt: ContextRuntime, store: Store, m: ChatMessage, thread: str
) -> tuple[BuiltContext, list[dict[str, str]]]:
    """One @ as an episode makes it: the packet and prompt, its writes settled, the reply recorded."""
    chat = G1 if m.chat_id == G1.chat_id else G2
    await store_msg(store, m, thread)
    built, prompt = await rt.prepare(
        m, chat=chat, now=m.time, reason="forced", conversation_thread_id=thread, defer_writes=True
    )
    built = await rt.builder.settle(built)
    await rt.builder.record_reply(built, f"好的{m.message_id}", now=m.time + 1)
    return built, prompt.as_messages()


async def script(rt: ContextRuntime, store: Store) -> list[tuple[Any, ...]]:
    """A session's turns, its close and the next session's turns with the handoff; then another chat
    bound to the same thread closes session after session, until the first chat's handoff is no
    longer among the thread's newest ten. Returns every packet and prompt, then the rows."""
    seen: list[tuple[Any, ...]] = []

    async def one(m: ChatMessage, thread: str) -> BuiltContext:
        built, prompt = await turn(rt, store, m, thread)
        seen.append((built.packet, prompt, built.degraded))
        return built

    first = await one(msg(G1, "m1", "u1", "灰风，帮我排一下杭州三日游的路线", 0.0, addressed=True), "th-1")
    assert first.resolution is not None
    topic = first.resolution.thread.id
    await rt.tasks.create(topic, "订杭州的酒店", now=10.0)
    decided = await rt.tasks.create(topic, "杭州路线第一天", now=11.0)
    await rt.tasks.conclude(decided.id, conclusion="第一天去西湖", now=12.0)
    await one(msg(G1, "m2", "u1", "灰风，杭州路线第二天呢", 30.0, addressed=True), "th-1")
    await one(msg(G1, "m3", "u2", "灰风，杭州路线第三天呢", 60.0, addressed=True), "th-1")
    # Silent past the timeout: the next turn closes the session and the new one takes its handoff.
    await one(msg(G1, "m4", "u1", "灰风，杭州路线再说一遍", 4_000.0, addressed=True), "th-2")
    await rt.resolver.bind(G2.chat_id, topic, now=4_001.0)
    for n in range(12):
        t = 4_010.0 + n * 20
        await one(msg(G1, f"g1-{n}", "u1", f"灰风，杭州路线第{n}个细节", t, addressed=True), "th-2")
        other = await one(
            msg(G2, f"g2-{n}", "u7", f"灰风，杭州路线我们群第{n}次", t + 5, addressed=True), "th-9"
        )
        assert other.session is not None
        await rt.sessions.close(other.session.id, now=t + 10)
    rows: list[tuple[Any, ...]] = [
        (s.id, s.topic_thread_id, s.chat_id, s.state, s.recent_dialogue, s.updated_at)
        for s in await store.list_sessions()
    ]
    rows += [
        (h.id, h.from_session_id, h.to_session_id, h.summary)
        for h in await store.list_handoffs(topic, limit=50)
    ]
    rows += [(t.id, t.title, t.updated_at, t.status, t.chat_ids) for t in await store.list_topic_threads()]
    return [*seen, *rows]


@pytest.mark.parametrize("backend", registered_backends())
async def test_the_packets_are_those_of_reading_every_part_every_time(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend_ready(request, backend)
    results: dict[str, list[tuple[Any, ...]]] = {}
    calls: dict[str, Counter[str]] = {}
    for way in ("reading every time", "as built"):
        if backend == "postgresql":  # each way on a database of its own
            cluster = request.getfixturevalue("postgres_cluster")
            monkeypatch.setenv("GREYWIND_PG_DSN", cluster.fresh_database("part_reads"))
        store = await open_store(StoreConfig(backend=backend), tmp_path / way)
        try:
            await plant(store)
            with monkeypatch.context() as patched:
                counted: Counted
                if way == "reading every time":
                    patched.setattr(HandoffManager, "_remember", lambda *_: None)  # keeps nothing
                    patched.setattr(
                        ContextBuilder,
                        "_tasks_of",
                        lambda b, thread, made, _: TASKS_OF(b, thread, made, None),  # reads them itself
                    )
                    counted = OneByOne(store)
                else:
                    counted = Counted(store)
                results[way] = await script(runtime(counted), counted)
            calls[way] = counted.calls
        finally:
            await store.close()
    assert results["as built"] == results["reading every time"]
    handoffs = [p.handoff for p, *_ in results["as built"][4:28:2]]
    # The script reaches the case where the first chat's handoff falls out of the newest ten.
    assert handoffs[0] is not None
    assert handoffs[-1] is None
    assert calls["as built"]["list_handoffs"] < calls["reading every time"]["list_handoffs"]
    assert calls["as built"]["search_memories"] == 0
    assert calls["as built"]["list_tasks"] < calls["reading every time"]["list_tasks"]
    # The thread slot shows the tasks and retrieval offers the one concluded.
    second = results["as built"][1][0]
    assert [t.title for t in second.thread.tasks] == ["订杭州的酒店", "杭州路线第一天"]
    assert any(r.source_type == "task" for r in second.retrieved), second.retrieved


async def test_an_ongoing_sessions_turn_reads_its_handoff_once_and_searches_memories_once(
    store: Store,
) -> None:
    counted = Counted(store)
    await plant(store)
    rt = runtime(counted)
    await turn(
        rt, store, msg(G1, "m1", "u1", "灰风，帮我排一下杭州三日游的路线", 0.0, addressed=True), "th-1"
    )
    for n, at in enumerate((30.0, 60.0, 90.0)):
        counted.calls.clear()
        m = msg(G1, f"m{n + 2}", "u1", f"灰风，杭州三日游路线第{n + 2}天呢", at, addressed=True)
        built, _ = await turn(rt, store, m, "th-1")
        assert not built.session_created
        assert built.packet.retrieved, "the memories were searched and found"
        assert counted.calls["list_handoffs"] == 0, counted.calls
        assert sum(counted.calls[name] for name in MEMORY_SEARCHES) == 1, counted.calls

    # After a restart the first turn of the session reads its handoff; the next ones do not.
    again = runtime(counted)
    for n, at in enumerate((120.0, 150.0)):
        counted.calls.clear()
        m = msg(G1, f"r{n}", "u1", f"灰风，杭州三日游路线第{n + 5}天呢", at, addressed=True)
        await turn(again, store, m, "th-1")
        assert counted.calls["list_handoffs"] == (1 if n == 0 else 0), counted.calls


class TasksWait(Counted):
    """The store, its task lists held back until ``gate`` opens."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.gate = anyio.Event()

    async def list_tasks(self, **kwargs: Any) -> list[Task]:
        self.calls["list_tasks"] += 1
        await self.gate.wait()
        return await self._store.list_tasks(**kwargs)


async def test_retrieval_reads_what_needs_no_scope_beside_the_threads_tasks(store: Store) -> None:
    """The message search and the thread's important memories do not wait for the tasks (which the
    memory search's scopes need); what is found is the same."""
    await plant(store)
    await store.upsert_memory(
        Memory("imp", ScopeType.THREAD, "topic-9", "fact", "这个线程的预算是两千", 0.9, 1.0, 1.0)
    )
    await store_msg(store, msg(G1, "old", "u3", "去年杭州路线走过一次", 0.0), "th-0")
    query = RetrievalQuery(chat_id=G1.chat_id, text="杭州路线怎么走", now=10_000.0, topic_thread_id="topic-9")
    alone = await RetrievalEngine(store).retrieve(query)
    held = TasksWait(store)
    got: list[Any] = []

    async def retrieve() -> None:
        got.append(await RetrievalEngine(held).retrieve(query))  # type: ignore[arg-type]

    async with anyio.create_task_group() as tg:
        tg.start_soon(retrieve)
        for _ in range(500):  # (five seconds at most)
            if held.calls["search_messages"] and held.calls["list_memories"]:
                break
            await anyio.sleep(0.01)
        assert held.calls["search_messages"] == 1, held.calls
        assert held.calls["list_memories"] == 1, held.calls
        assert got == []
        assert held.calls["search_memories_each"] == 0, "the memory search waits for the tasks"
        held.gate.set()
    assert got == [alone]
    assert {s.source_id for s in alone} >= {"imp", f"{G1.chat_id}/old"}, alone
