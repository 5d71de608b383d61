"""The task tools (``task_create``, ``task_list``, ``task_update``, ``task_conclude``) as an extension:
the tasks of the chat's topic thread, through the context's TaskBook and ThreadResolver."""

from __future__ import annotations

from runtime.context.resolver import ThreadResolver
from runtime.context.tasks import TaskBook
from runtime.context.tools import task_tool_specs
from runtime.extensions.context import ExtensionContext
from runtime.extensions.manifest import Extension

__all__ = ["extension"]


def _setup(ctx: ExtensionContext) -> None:
    for spec in task_tool_specs(
        tasks=ctx.service(TaskBook), resolver=ctx.service(ThreadResolver), store=ctx.store
    ):
        ctx.tool(spec)


extension = Extension("tasks", _setup, description="话题线程下的任务")
