"""Tasks (design/000 §3.4): units of work under a topic thread, with a status and, at the end, a conclusion.

A task is created by a tool or an admin command, moves through ``open → in_progress → blocked/done/
cancelled``, and on :meth:`TaskBook.conclude` keeps its conclusion: the ThreadSlot lists the thread's
tasks, and the RetrievalEngine offers concluded tasks as "what we decided last time". A change to a
task is activity on its thread: the thread's ``updated_at`` moves too (the resolver's recency and its
cached view of the thread's open tasks both follow it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from runtime.context.errors import UnknownTaskError, UnknownTopicThreadError
from runtime.context.packet import TaskLine
from runtime.kernel.ids import IdFactory, counter_ids
from runtime.store.records import Task, TaskStatus
from runtime.store.roles import ContextRows

__all__ = ["OPEN_TASK_STATUSES", "TaskBook", "TaskBookStatistics", "task_lines"]

OPEN_TASK_STATUSES = frozenset({TaskStatus.OPEN, TaskStatus.IN_PROGRESS, TaskStatus.BLOCKED})
_CLOSED = frozenset({TaskStatus.DONE, TaskStatus.CANCELLED})


@dataclass(frozen=True, slots=True)
class TaskBookStatistics:
    created: int
    updated: int
    concluded: int


def task_lines(tasks: list[Task], *, limit: int = 8) -> tuple[TaskLine, ...]:
    """Tasks as the ThreadSlot shows them: open ones first (most recently touched first), then concluded."""
    ordered = sorted(tasks, key=lambda t: (t.status in _CLOSED, -t.updated_at, t.id))
    return tuple(TaskLine(t.id, t.title, t.status.value, t.conclusion) for t in ordered[:limit])


class TaskBook:
    """Create, update and conclude the tasks of topic threads; every change is written through."""

    __slots__ = ("_concluded", "_created", "_ids", "_store", "_updated")

    def __init__(self, store: ContextRows, *, ids: IdFactory | None = None) -> None:
        self._store = store
        self._ids = ids or counter_ids()
        self._created = 0
        self._updated = 0
        self._concluded = 0

    async def create(
        self, topic_thread_id: str, title: str, *, now: float, tags: tuple[str, ...] = ()
    ) -> Task:
        """A new open task under an existing topic thread (:class:`UnknownTopicThreadError` if none)."""
        if await self._store.get_topic_thread(topic_thread_id) is None:
            raise UnknownTopicThreadError(topic_thread_id)
        title = title.strip()
        if not title:
            raise ValueError("a task needs a title")
        task = Task(
            id=self._ids("task"),
            topic_thread_id=topic_thread_id,
            title=title,
            status=TaskStatus.OPEN,
            created_at=now,
            updated_at=now,
            tags=tags,
        )
        await self._store.upsert_task(task)
        await self._touch(topic_thread_id, now)
        self._created += 1
        return task

    async def _touch(self, topic_thread_id: str, now: float) -> None:
        thread = await self._store.get_topic_thread(topic_thread_id)
        if thread is not None and thread.updated_at < now:
            await self._store.upsert_topic_thread(replace(thread, updated_at=now))

    async def get(self, task_id: str) -> Task:
        task = await self._store.get_task(task_id)
        if task is None:
            raise UnknownTaskError(task_id)
        return task

    async def update(
        self,
        task_id: str,
        *,
        now: float,
        status: TaskStatus | None = None,
        title: str | None = None,
        tags: tuple[str, ...] | None = None,
    ) -> Task:
        task = await self.get(task_id)
        task = replace(
            task,
            status=status if status is not None else task.status,
            title=title.strip() if title else task.title,
            tags=tags if tags is not None else task.tags,
            updated_at=now,
        )
        await self._store.upsert_task(task)
        await self._touch(task.topic_thread_id, now)
        self._updated += 1
        return task

    async def conclude(
        self, task_id: str, conclusion: str, *, now: float, status: TaskStatus = TaskStatus.DONE
    ) -> Task:
        """Close a task with what came of it (``done`` or ``cancelled``)."""
        if status not in _CLOSED:
            raise ValueError(f"a concluded task is done or cancelled, not {status}")
        task = replace(await self.get(task_id), status=status, conclusion=conclusion.strip(), updated_at=now)
        await self._store.upsert_task(task)
        await self._touch(task.topic_thread_id, now)
        self._concluded += 1
        return task

    async def for_thread(self, topic_thread_id: str, *, limit: int = 20) -> list[Task]:
        """The thread's tasks, most recently updated first."""
        return await self._store.list_tasks(topic_thread_id=topic_thread_id, limit=limit)

    def statistics(self) -> TaskBookStatistics:
        return TaskBookStatistics(created=self._created, updated=self._updated, concluded=self._concluded)
