"""Task tools through the ToolRegistry: they work on the turn's topic thread and never across chats."""

from __future__ import annotations

import pytest

from runtime.context.resolver import ThreadResolver
from runtime.context.tasks import TaskBook
from runtime.context.tools import register_task_tools
from runtime.store.protocol import Store
from runtime.tools import ToolContext, ToolRegistry

G1, G2 = "group:1", "group:2"


@pytest.mark.asyncio
async def test_task_tools_create_list_update_and_conclude_in_the_turns_thread(store: Store) -> None:
    resolver = ThreadResolver(store)
    tasks = TaskBook(store)
    registry = ToolRegistry()
    dispose = register_task_tools(registry, tasks=tasks, resolver=resolver, store=store)
    first = await resolver.resolve(G1, "我们来设计灰风的上下文运行时", now=0.0, conversation_thread_id="th-1")
    ctx = ToolContext(chat_id=G1, thread_id="th-1", now=10.0)

    created = await registry.invoke("task_create", {"title": "写 session 状态机"}, ctx)
    assert created.ok, created.message
    task = (await tasks.for_thread(first.thread.id))[0]
    assert task.title == "写 session 状态机"
    assert (await registry.invoke("task_update", {"task_id": task.id, "status": "in_progress"}, ctx)).ok
    listed = await registry.invoke("task_list", {}, ctx)
    assert f"{task.id} [in_progress] 写 session 状态机" in listed.content
    done = await registry.invoke(
        "task_conclude", {"task_id": task.id, "conclusion": "五个状态，见 sessions.py"}, ctx
    )
    assert done.ok
    assert (await tasks.get(task.id)).conclusion == "五个状态，见 sessions.py"
    assert "没有任务" in (await registry.invoke("task_list", {}, ctx)).content

    # Another chat can neither see nor touch the task.
    await resolver.resolve(G2, "二群自己的话题：周末爬山路线", now=20.0, conversation_thread_id="th-9")
    other = ToolContext(chat_id=G2, thread_id="th-9", now=30.0)
    refused = await registry.invoke("task_update", {"task_id": task.id, "status": "open"}, other)
    assert not refused.ok
    assert "不属于这个聊天" in refused.message
    assert task.id not in (await registry.invoke("task_list", {"include_done": True}, other)).content

    dispose()
    assert registry.list(frozenset()) == []


@pytest.mark.asyncio
async def test_task_tools_need_a_topic_thread(store: Store) -> None:
    registry = ToolRegistry()
    register_task_tools(registry, tasks=TaskBook(store), resolver=ThreadResolver(store), store=store)
    result = await registry.invoke("task_create", {"title": "x"}, ToolContext(chat_id=G1, now=1.0))
    assert not result.ok
    assert "还没有进行中的话题线程" in result.message
