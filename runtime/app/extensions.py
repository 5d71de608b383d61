"""Loading the extensions at start: the built-ins, ``[extensions] modules`` and entry points.

:func:`load_extensions` gives the loader what extensions may use — the tool, extension and command
registries, the message listeners, the clock, a read-only view of the store, the task group — and the
services the built-ins ask for (memory writes, ids, reminders, the task book, the time zone). Their
registrations are owned by a child of the runtime's scope, so ``stop`` disposes them with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from anyio.abc import TaskGroup

from runtime.app.reminders import KernelReminders
from runtime.context.resolver import ThreadResolver
from runtime.context.tasks import TaskBook
from runtime.extensions.builtin import BUILTIN_EXTENSIONS
from runtime.extensions.builtin.services import Ids, MemoryWriter, ReminderBook, ReminderLimits, TimeZone
from runtime.extensions.context import ReadOnlyStore
from runtime.extensions.loader import ExtensionLoader, LoadReport

if TYPE_CHECKING:
    from runtime.app.runtime import Runtime

__all__ = ["load_extensions"]


async def load_extensions(rt: Runtime, task_group: TaskGroup) -> tuple[ExtensionLoader, LoadReport]:
    app = rt.app
    services: dict[object, object] = {
        MemoryWriter: rt.store,
        Ids: rt.ids,
        ReminderBook: KernelReminders(rt.kernel, rt.persistence, rt.loop),
        ReminderLimits: ReminderLimits(
            app.reminder_max_ahead_ms, app.reminder_grace_ms, app.reminders_per_chat
        ),
        TimeZone: TimeZone(app.timezone),
        TaskBook: rt.context.tasks,
        ThreadResolver: rt.context.resolver,
    }
    rt.listeners.start(task_group)
    loader = ExtensionLoader(
        rt.config.extensions,
        scope=rt.scope.child("extensions"),
        clock=rt.clock_obj,
        tools=rt.tools,
        extensions=rt.extensions,
        listeners=rt.listeners,
        commands=rt.commands,
        store=ReadOnlyStore(rt.store),
        services=services,
        task_group=task_group,
    )
    return loader, await loader.load_all(BUILTIN_EXTENSIONS)
