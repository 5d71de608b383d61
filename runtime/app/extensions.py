"""Loading the extensions at start: the built-ins, ``[extensions] modules`` and entry points.

:func:`load_extensions` gives the loader what extensions may use — the tool, extension and command
registries, the message listeners, the clock, a read-only view of the store, the task group — and the
services the built-ins ask for (memory writes, ids, reminders, the task book, the time zone). Their
registrations are owned by a child of the runtime's scope, so stopping disposes them with it.
"""

from __future__ import annotations

from anyio.abc import TaskGroup

from runtime.app.alarm import Alarm
from runtime.app.core import CoreParts
from runtime.app.persistence import StatePersistence
from runtime.app.reminders import KernelReminders
from runtime.commands import CommandRegistry
from runtime.context.resolver import ThreadResolver
from runtime.context.setup import ContextRuntime
from runtime.context.tasks import TaskBook
from runtime.extensions import LifeSettings
from runtime.extensions.builtin import BUILTIN_EXTENSIONS
from runtime.extensions.builtin.services import (
    Ids,
    MemoryShelf,
    MemoryWriter,
    ReminderBook,
    ReminderLimits,
    TimeZone,
)
from runtime.extensions.context import ReadOnlyStore
from runtime.extensions.loader import ExtensionLoader, LoadReport
from runtime.store.protocol import Store

__all__ = ["load_extensions"]


async def load_extensions(
    core: CoreParts,
    *,
    store: Store,
    context: ContextRuntime,
    persistence: StatePersistence,
    alarm: Alarm,
    commands: CommandRegistry,
    task_group: TaskGroup,
) -> tuple[ExtensionLoader, LoadReport]:
    app = core.config.runtime
    services: dict[object, object] = {
        MemoryWriter: store,
        MemoryShelf: store,  # follow-ups and memory hooks, kept among the memories
        LifeSettings: core.life_settings,
        Ids: core.ids,
        ReminderBook: KernelReminders(core.kernel, persistence, alarm),
        ReminderLimits: ReminderLimits(
            app.reminder_max_ahead_ms, app.reminder_grace_ms, app.reminders_per_chat
        ),
        TimeZone: TimeZone(app.timezone),
        TaskBook: context.tasks,
        ThreadResolver: context.resolver,
    }
    core.listeners.start(task_group)
    loader = ExtensionLoader(
        core.config.extensions,
        scope=core.scope.child("extensions"),
        clock=core.clock_obj,
        tools=core.tools,
        extensions=core.extensions,
        listeners=core.listeners,
        commands=commands,
        store=ReadOnlyStore(store),
        services=services,
        task_group=task_group,
    )
    return loader, await loader.load_all(BUILTIN_EXTENSIONS)
