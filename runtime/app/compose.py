"""The composition root: the running bot built in dependency order, each part given only what it uses.

:func:`compose` is the one place that knows how the parts fit. It makes them in the order they depend
on each other — the kernel and the other parts that need nothing (:mod:`runtime.app.core`), the
store, the model router's clients, the store writer, the Context Runtime and memory layer on the
store, the persistence, the alarm, the episode driver, the activation loop, the admin control, the
extensions (the built-ins first), the MCP servers (connected in the background: nothing waits for
them), the restore, the periodic jobs — and hands each its collaborators at
construction (a ``...Parts`` value or explicit arguments), never the whole runtime, and never fills
one in later.

Everything it starts or registers is owned by one :class:`~runtime.lifetime.Lifetime`, which undoes it
newest first at stop, each closing step within its share of the edge's 10 s grace: the periodic jobs
stop, running episodes finish (``STOP_EPISODES_WAIT``), background bookkeeping drains
(``STOP_BACKGROUND_WAIT``), the last save (``STOP_SAVE_WAIT``), open sessions close with their handoffs
(``STOP_SESSIONS_WAIT``), registrations are undone, the memory injector stops, the writer flushes
(``STOP_WRITER_WAIT``), the model router closes, and the store, opened first, closes last
(``STOP_STORE_WAIT``). A start that fails closes what was already made.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import anyio
import structlog
from anyio.abc import TaskGroup

from runtime.app.alarm import Alarm
from runtime.app.background import Background
from runtime.app.control import Control, ControlParts
from runtime.app.core import CoreParts, core_parts
from runtime.app.episodes import DriverParts, EpisodeDriver
from runtime.app.extensions import load_extensions
from runtime.app.group_gate import GroupGatedOutbound
from runtime.app.loop import ActivationLoop
from runtime.app.maintenance import Maintenance
from runtime.app.parts import open_context
from runtime.app.persistence import RestoreReport, StatePersistence
from runtime.app.slots import EpisodeSlots
from runtime.commands import CommandRegistry
from runtime.context.setup import ContextRuntime
from runtime.extensions.chat_activity import restore_activity
from runtime.extensions.loader import ExtensionLoader
from runtime.lifetime import Lifetime
from runtime.llm.router import ModelRouter
from runtime.mcp import McpHub
from runtime.memory.layers import MemoryLayer
from runtime.ports import EdgeContext, SentRecord
from runtime.store.backends import StoreScope, open_store
from runtime.store.errors import StoreError
from runtime.store.protocol import RestorePolicy, Store
from runtime.store.rebind import RebindsChats, rebind_known
from runtime.store.writer import StoreWriter

__all__ = [
    "SERVICE_RESTART_DELAY",
    "STOP_BACKGROUND_WAIT",
    "STOP_EPISODES_WAIT",
    "STOP_SAVE_WAIT",
    "STOP_SESSIONS_WAIT",
    "STOP_STORE_WAIT",
    "STOP_WRITER_WAIT",
    "RunningBot",
    "StorageParts",
    "compose",
]

log = structlog.get_logger("greywind.runtime")

SERVICE_RESTART_DELAY = 5.0
# Shares of the edge's 10 s shutdown grace (seconds).
STOP_EPISODES_WAIT = 3.0
STOP_BACKGROUND_WAIT = 2.0
STOP_SESSIONS_WAIT = 3.0
STOP_SAVE_WAIT = 1.0
STOP_WRITER_WAIT = 2.0
STOP_STORE_WAIT = 1.0
STOP_ROUTER_WAIT = 0.5
# The writer's own timeout is its share; the closing step may take a little longer to report it.
_WRITER_MARGIN = 0.5


async def keep_serving(name: str, serve: Callable[[], Awaitable[object]]) -> None:
    """Run a background service; one that fails is logged and restarted, never the whole bot."""
    while True:
        try:
            await serve()
            return
        except Exception:
            log.exception("service_failed", service=name)
            await anyio.sleep(SERVICE_RESTART_DELAY)


async def compose(
    edge: EdgeContext,
    task_group: TaskGroup,
    *,
    on_sent: Callable[[SentRecord], None],
    commands: CommandRegistry,
    router: ModelRouter | None = None,
) -> RunningBot:
    """Build and start the running bot in ``task_group``; see the module docstring. ``on_sent`` hears
    every part the edge sends (registered in the bot's scope); ``commands`` is the registry the
    extensions declare their commands in (the gateway's, which the edge reads)."""
    lifetime = Lifetime("runtime", task_group)
    try:
        return await _compose(edge, lifetime, task_group, on_sent=on_sent, commands=commands, router=router)
    except BaseException:
        # A start that fails must not leave the store's thread (or any task) keeping the process alive.
        with anyio.CancelScope(shield=True):
            await lifetime.aclose()
        raise


@dataclass(frozen=True, slots=True)
class StorageParts:
    """The store and what is built on it."""

    store: Store
    writer: StoreWriter
    context: ContextRuntime
    memory: MemoryLayer | None


@dataclass(frozen=True, slots=True)
class RunningBot:
    """Every part of the running bot, as :func:`compose` made them (for the gateway and introspection)."""

    core: CoreParts
    storage: StorageParts
    lifetime: Lifetime
    persistence: StatePersistence
    alarm: Alarm
    background: Background
    driver: EpisodeDriver
    loop: ActivationLoop
    control: Control
    maintenance: Maintenance
    extensions: ExtensionLoader
    restored: RestoreReport
    mcp: McpHub


async def _open_storage(core: CoreParts, edge: EdgeContext, lifetime: Lifetime) -> StorageParts:
    """The store first (everything after depends on it, so it closes last), its writer, the model
    router's clients, the Context Runtime and the memory layer; the memory injector's service."""
    config = core.config
    listed = edge.shared_config.account_ids() if edge.shared_config is not None else ()
    store = await open_store(config.store, edge.data_dir, StoreScope(edge.account, tuple(listed)))
    lifetime.add_async(store.close, name="store", deadline=STOP_STORE_WAIT)
    if isinstance(store, RebindsChats):
        try:
            # Before anything is restored: chats from before keys named their account get it.
            await rebind_known(store, edge.data_dir, edge.chat_bindings())
        except (StoreError, ValueError):
            log.exception("chats_rebind_failed")  # the unbound chats stay; the next start tries again
    lifetime.add_async(core.router.aclose, name="model_router", deadline=STOP_ROUTER_WAIT)
    core.router.open_clients()  # before serving: a client's first making holds the loop ~0.1 s
    writer = StoreWriter.from_config(store, config.store)
    lifetime.start("store_writer", writer.run)

    async def close_writer() -> None:
        try:
            await writer.aclose(timeout=STOP_WRITER_WAIT)
        except Exception as exc:  # store.writes_lost has said how many and why
            log.warning("writer_close_failed", error=str(exc))

    lifetime.add_async(close_writer, name="store_writer", deadline=STOP_WRITER_WAIT + _WRITER_MARGIN)
    context, memory = open_context(
        store,
        writer,
        config,
        core.router,
        model_ready=core.model_ready,
        clock=core.clock,
        data_dir=edge.data_dir,
        ids=core.ids,
        recent=core.recent,
    )
    if memory is not None:
        lifetime.start("memory_injector", keep_serving, "memory_injector", memory.injector.serve)
    return StorageParts(store, writer, context, memory)


def _persistence(core: CoreParts, storage: StorageParts, edge: EdgeContext) -> StatePersistence:
    memory = storage.memory
    return StatePersistence(
        core.kernel,
        storage.store,
        storage.writer,
        restore_policy=RestorePolicy.from_config(core.config.store),
        sessions=storage.context.sessions,
        injector=memory.injector if memory is not None else None,
        ledger=core.router.ledger,
        room=core.room,
        activity=core.activity,
        recent=core.recent,
        deliveries=core.deliveries,
        quiet=core.quiet,
        gates=edge.outbound.gates,
        groups=core.groups,
        data_dir=edge.data_dir,
        clock=core.clock,
    )


def _driver(
    core: CoreParts,
    storage: StorageParts,
    edge: EdgeContext,
    alarm: Alarm,
    background: Background,
    lifetime: Lifetime,
    mcp: McpHub,
) -> EpisodeDriver:
    return EpisodeDriver(
        DriverParts(
            config=core.config,
            app=core.config.runtime,
            clock=core.clock,
            clock_obj=core.clock_obj,
            ids=core.ids,
            persona=core.persona,
            model_ready=core.model_ready,
            kernel=core.kernel,
            room=core.room,
            episode_settings=core.episode_settings,
            tools=core.tools,
            director=core.director,
            router=core.router,
            store=storage.store,
            writer=storage.writer,
            context=storage.context,
            memory=storage.memory,
            outbound=GroupGatedOutbound(edge.outbound, core.groups),
            recent=core.recent,
            why=core.why,
            recalled=core.recalled,
            alarm=alarm,
            loop_spawn=background.spawn,
            running=lambda: not lifetime.closing,
            tool_grants=mcp.grants,
        )
    )


def _control(
    core: CoreParts,
    storage: StorageParts,
    edge: EdgeContext,
    persistence: StatePersistence,
    loop: ActivationLoop,
    driver: EpisodeDriver,
    mcp: McpHub,
) -> Control:
    return Control(
        ControlParts(
            edge=edge,
            app=core.config.runtime,
            clock=core.clock,
            persona=core.persona,
            model_ready=core.model_ready,
            kernel=core.kernel,
            room=core.room,
            router=core.router,
            store=storage.store,
            writer=storage.writer,
            context=storage.context,
            outbound=GroupGatedOutbound(edge.outbound, core.groups),
            persistence=persistence,
            quiet=core.quiet,
            groups=core.groups,
            why=core.why,
            loop=loop,
            driver=driver,
            mcp_status=mcp.status_lines,
            director=core.director,
        )
    )


def _maintenance(
    core: CoreParts, storage: StorageParts, persistence: StatePersistence, alarm: Alarm
) -> Maintenance:
    return Maintenance(
        core.kernel,
        storage.store,
        clock=core.clock,
        app=core.config.runtime,
        lexicon=core.config.lexicon,
        restore_policy=RestorePolicy.from_config(core.config.store),
        sessions=storage.context.sessions,
        activity=core.activity,
        ledger=core.router.ledger,
        director=core.director,
        life=core.life_settings,
        save=persistence.save,
        alarm=alarm,
    )


async def _compose(
    edge: EdgeContext,
    lifetime: Lifetime,
    task_group: TaskGroup,
    *,
    on_sent: Callable[[SentRecord], None],
    commands: CommandRegistry,
    router: ModelRouter | None,
) -> RunningBot:
    core = core_parts(edge, router)
    if edge.model_configured and not core.model_ready:
        # The edge found a chat model the router cannot use; without one at all the edge says so itself.
        log.warning("no_model", problem=core.router.problem or "the router found no chat model")
    storage = await _open_storage(core, edge, lifetime)
    lifetime.add(core.director.close, name="life_director")
    lifetime.add(core.scope.dispose, name="registrations")
    persistence = _persistence(core, storage, edge)
    background = Background(task_group)
    alarm = Alarm(core.kernel.scheduler, core.clock, lag=edge.clock_lag)
    # MCP servers' tools join the registry once their sessions are up (in the background, below).
    mcp = McpHub(core.config.mcp, core.tools, superusers=edge.superusers, data_dir=edge.data_dir)
    driver = _driver(core, storage, edge, alarm, background, lifetime, mcp)
    app = core.config.runtime
    slots = EpisodeSlots(app.max_concurrent_episodes, app.forced_episode_reserve)
    loop = ActivationLoop(core.kernel, alarm, driver, slots, clock=core.clock, addressed_work=edge.addressed)
    control = _control(core, storage, edge, persistence, loop, driver, mcp)
    core.scope.add(edge.outbound.on_sent(on_sent))
    extensions, _ = await load_extensions(
        core,
        store=storage.store,
        context=storage.context,
        persistence=persistence,
        alarm=alarm,
        commands=commands,
        task_group=task_group,
    )
    # After the extensions: a server's tool never takes a built-in tool's name. Returns at once.
    mcp.start(lifetime)
    restored = await persistence.restore(core.clock())
    # The chats a follow-up or a memory hook may still speak into, beyond the messages' restore window.
    await restore_activity(
        core.activity, storage.store, since=core.clock() - core.life_settings.grounds_window
    )

    # Restored: from here on, stopping closes the sessions, saves, and lets the bookkeeping drain.
    async def close_sessions() -> None:
        # Those left open (cut short) are marked interrupted at the next start and resumed from there.
        closed = await storage.context.sessions.close_all(core.clock())
        log.info("sessions_closed", count=len(closed))

    lifetime.add_async(close_sessions, name="sessions", deadline=STOP_SESSIONS_WAIT)
    lifetime.add_async(persistence.save, name="final_save", deadline=STOP_SAVE_WAIT)
    lifetime.add_async(background.wait, name="background_work", deadline=STOP_BACKGROUND_WAIT)
    loop.start(task_group)
    lifetime.start("activation_loop", loop.run)
    lifetime.add_async(
        partial(loop.stop, within=STOP_EPISODES_WAIT), name="episodes", deadline=STOP_EPISODES_WAIT + 2
    )
    maintenance = _maintenance(core, storage, persistence, alarm)
    maintenance.start(lifetime)
    return RunningBot(
        core,
        storage,
        lifetime,
        persistence,
        alarm,
        background,
        driver,
        loop,
        control,
        maintenance,
        extensions,
        restored,
        mcp,
    )
