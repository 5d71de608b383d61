"""Task tools: the persona creates, lists, updates and concludes the tasks of the current topic thread.

Registered into the episode's ``ToolRegistry`` by :func:`register_task_tools`, which returns one disposer
that removes them all (in reverse order). A tool works on the topic thread of the calling turn: the one
the conversation thread was resolved to, else the chat's most recently active work thread. A task of a
thread the calling chat does not see is refused, so no chat edits another chat's tasks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pydantic import BaseModel, Field

from runtime.context.errors import ContextError
from runtime.context.resolver import ThreadResolver
from runtime.context.tasks import OPEN_TASK_STATUSES, TaskBook
from runtime.store.records import Task, TaskStatus, TopicThread
from runtime.tools import ToolContext, ToolRegistry, ToolSpec

__all__ = ["TopicThreads", "register_task_tools", "task_tool_specs"]


class _Create(BaseModel):
    title: str = Field(min_length=1, max_length=120, description="任务标题，一句话")
    tags: list[str] = Field(default_factory=list, max_length=5)


class _Update(BaseModel):
    task_id: str = Field(min_length=1)
    status: TaskStatus = Field(description="open / in_progress / blocked")


class _Conclude(BaseModel):
    task_id: str = Field(min_length=1)
    conclusion: str = Field(min_length=1, max_length=400, description="结果或结论，一两句话")
    cancelled: bool = False


class _List(BaseModel):
    include_done: bool = False


def _line(task: Task) -> str:
    line = f"{task.id} [{task.status.value}] {task.title}"
    return line + (f" —— {task.conclusion}" if task.conclusion else "")


class TopicThreads(Protocol):
    """What the task tools read of the store: a topic thread by id."""

    async def get_topic_thread(self, thread_id: str) -> TopicThread | None: ...


def register_task_tools(
    registry: ToolRegistry, *, tasks: TaskBook, resolver: ThreadResolver, store: TopicThreads
) -> Callable[[], None]:
    """Add ``task_create``, ``task_list``, ``task_update`` and ``task_conclude``; returns their disposer."""
    disposers = [
        registry.register(spec) for spec in task_tool_specs(tasks=tasks, resolver=resolver, store=store)
    ]

    def dispose() -> None:
        for undo in reversed(disposers):
            undo()

    return dispose


def task_tool_specs(
    *, tasks: TaskBook, resolver: ThreadResolver, store: TopicThreads
) -> tuple[ToolSpec, ...]:
    """The four task tools, for a registry (or an extension) to register."""

    async def topic(ctx: ToolContext) -> str:
        found = await resolver.topic_of(ctx.chat_id, ctx.thread_id)
        if found is None:
            raise ContextError("这个聊天里还没有进行中的话题线程，先把要做的事说清楚再建任务")
        return found

    async def own(task_id: str, ctx: ToolContext) -> Task:
        task = await tasks.get(task_id)
        thread = await store.get_topic_thread(task.topic_thread_id)
        if thread is None or ctx.chat_id not in thread.chat_ids:
            raise ContextError(f"任务 {task_id} 不属于这个聊天")
        return task

    async def create(args: _Create, ctx: ToolContext) -> str:
        task = await tasks.create(await topic(ctx), args.title, now=ctx.now, tags=tuple(args.tags))
        return f"已创建任务 {_line(task)}"

    async def listing(args: _List, ctx: ToolContext) -> str:
        found = await tasks.for_thread(await topic(ctx))
        shown = [t for t in found if args.include_done or t.status in OPEN_TASK_STATUSES]
        return "\n".join(_line(t) for t in shown) or "没有任务"

    async def update(args: _Update, ctx: ToolContext) -> str:
        if args.status not in OPEN_TASK_STATUSES:
            raise ContextError("结束任务请用 task_conclude，并写上结论")
        await own(args.task_id, ctx)
        return f"已更新 {_line(await tasks.update(args.task_id, now=ctx.now, status=args.status))}"

    async def conclude(args: _Conclude, ctx: ToolContext) -> str:
        await own(args.task_id, ctx)
        status = TaskStatus.CANCELLED if args.cancelled else TaskStatus.DONE
        return (
            f"已结束 {_line(await tasks.conclude(args.task_id, args.conclusion, now=ctx.now, status=status))}"
        )

    return (
        ToolSpec(
            "task_create",
            "在当前话题线程下新建一个任务（要推进的一件具体的事）",
            create,
            args_model=_Create,
            side_effect=True,
        ),
        ToolSpec("task_list", "列出当前话题线程的任务", listing, args_model=_List),
        ToolSpec(
            "task_update",
            "修改任务状态：open / in_progress / blocked",
            update,
            args_model=_Update,
            side_effect=True,
        ),
        ToolSpec(
            "task_conclude",
            "结束一个任务并写下结论（完成或取消）",
            conclude,
            args_model=_Conclude,
            side_effect=True,
        ),
    )
