"""The Runtime: the edge's :class:`~plugins.greywind.gateway.RuntimeGateway`, composing every part.

Built by :func:`build_runtime` (``use_runtime(build_runtime)`` in ``bot.py``). The synchronous parts
are made in the constructor: the kernel (with ids unique across restarts), the waiting room, the tool
and extension registries, the LifeDirector, the model router. :meth:`Runtime.start` opens the SQLite
store under the data directory, builds the Context Runtime and the memory layer on it, restores the
saved state (:mod:`runtime.app.persistence`) and starts the background work in the lifespan's task
group: the store writer, the activation loop (:mod:`runtime.app.loop`), the periodic jobs
(:mod:`runtime.app.maintenance`) and the memory injector. :meth:`Runtime.stop` saves, closes open
sessions (their handoffs written), flushes the writer and closes the store.

A message's path (:meth:`Runtime.on_message`) does no I/O beyond one queued store write, and never
waits for it (a full queue drops the write, counted and logged, rather than hold the chat): the kernel
decides, the message joins the recent buffer, the ``why`` log, the chat-activity log and the waiting
room's news; a forced message starts an episode at once, a scheduled one may move the loop's alarm.
Context packets are built, and the model called, only inside an episode (:mod:`runtime.app.episodes`).

With no model configured the runtime still runs everything up to the model: it ingests, decides and
logs what it would deliberate, and sends nothing (the edge is in shadow mode then).

Exceptions: none of its own cross the gateway. Start-up failures of the store (``runtime.store``'s
``StoreError`` family) propagate to the lifespan, which refuses to start; everything after start is
caught and logged where it happens (failures stay local).
"""

from __future__ import annotations

import contextlib
import inspect
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog
from anyio.abc import TaskGroup

from runtime.app.control import Control
from runtime.app.deliveries import RecentDeliveries
from runtime.app.episodes import DriverStatistics, EpisodeDriver
from runtime.app.ids import RestoringIds
from runtime.app.loop import ActivationLoop, LoopStatistics
from runtime.app.maintenance import Maintenance, MaintenanceStatistics
from runtime.app.persistence import PersistenceStatistics, StatePersistence
from runtime.context.builder import RecentBuffer
from runtime.episodes import EpisodeSettings, WaitingRoom, WaitingStatistics, tool_registry_from_config
from runtime.extensions import ChatActivityLog, ExtensionRegistry, LifeDirector, LifeSettings, Scope
from runtime.kernel.kernel import Kernel, KernelStatistics
from runtime.kernel.message import ChatMessage
from runtime.kernel.outcomes import Activation, ActivationOutcome, IngestAction, IngestResult
from runtime.kernel.settings import KernelSettings
from runtime.llm.router import ModelRouter
from runtime.quiet import QuietPeriod
from runtime.store.records import MessageRecalled, StoredMessage

if TYPE_CHECKING:
    from plugins.greywind.commands import RuntimeControl
    from plugins.greywind.gateway import EdgeContext
    from plugins.greywind.notices import Notice
    from plugins.greywind.outbound import Outbound, SentRecord
    from runtime.context.setup import ContextRuntime
    from runtime.memory.layers import MemoryLayer
    from runtime.store.sqlite.store import SqliteStore
    from runtime.store.writer import StoreWriter

__all__ = ["Runtime", "RuntimeStatistics", "build_runtime"]

log = structlog.get_logger("greywind.runtime")

SELF_SENDER = "self"
SERVICE_RESTART_DELAY = 5.0
RECALLED_KEPT = 4_096
# Shares of the edge's 10 s shutdown grace (seconds).
STOP_EPISODES_WAIT = 3.0
STOP_BACKGROUND_WAIT = 2.0
STOP_SESSIONS_WAIT = 3.0
STOP_SAVE_WAIT = 1.0
STOP_WRITER_WAIT = 2.0


class _FunctionClock:
    """The edge's ``clock()`` callable seen as a kernel ``Clock``."""

    __slots__ = ("_read",)

    def __init__(self, read: Callable[[], float]) -> None:
        self._read = read

    def now(self) -> float:
        return self._read()


@dataclass(frozen=True, slots=True)
class RuntimeStatistics:
    started: bool
    messages: int
    learn_queue: int
    loop: LoopStatistics
    episodes: DriverStatistics
    waiting: WaitingStatistics
    maintenance: MaintenanceStatistics
    persistence: PersistenceStatistics
    kernel: KernelStatistics


class WhyLog:
    """The last ``size`` ingest results of each chat, by message id (the admin ``why``), for the
    ``max_chats`` chats heard from most recently: bounded however many chats the account is in."""

    __slots__ = ("_by_chat", "_max_chats", "_size")

    def __init__(self, size: int, max_chats: int = 4_096) -> None:
        self._size = size
        self._max_chats = max_chats
        self._by_chat: OrderedDict[str, OrderedDict[str, IngestResult]] = OrderedDict()

    def note(self, result: IngestResult) -> None:
        chat_id = result.message.chat_id
        chat = self._by_chat.get(chat_id)
        if chat is None:
            chat = self._by_chat[chat_id] = OrderedDict()
            while len(self._by_chat) > self._max_chats:
                self._by_chat.popitem(last=False)
        else:
            self._by_chat.move_to_end(chat_id)
        chat[result.message.message_id] = result
        chat.move_to_end(result.message.message_id)
        while len(chat) > self._size:
            chat.popitem(last=False)

    def get(self, chat_id: str, message_id: str | None) -> IngestResult | None:
        chat = self._by_chat.get(chat_id)
        if not chat:
            return None
        if message_id is None:
            return next(reversed(chat.values()))
        return chat.get(message_id)


class Runtime:
    """See the module docstring."""

    def __init__(self, edge: EdgeContext, *, router: ModelRouter | None = None) -> None:
        self.edge = edge
        self.config = edge.config
        self.data_dir: Path = edge.data_dir
        self.clock: Callable[[], float] = edge.clock
        self.clock_obj = _FunctionClock(edge.clock)
        self.outbound: Outbound = edge.outbound
        self.app = self.config.runtime
        now = self.clock()
        self.ids = RestoringIds(self.clock_obj)
        settings = KernelSettings.from_config(self.config)
        # Lexicon learning runs here, off the loop (prepare in a worker thread), so the kernel keeps
        # no queue of its own.
        settings = replace(settings, scheduling=replace(settings.scheduling, learn_queue_max=0))
        self.kernel = Kernel(settings, ids=self.ids, now=now)
        self.learn_queue: deque[tuple[str, str]] = deque(
            maxlen=max(1, self.config.lexicon.learn_max_texts * 5)
        )
        self.episode_settings = EpisodeSettings.from_config(self.config.episodes)
        self.room = WaitingRoom(self.kernel, self.episode_settings)
        self.tools = tool_registry_from_config(self.config.episodes)
        self.scope = Scope("runtime")
        self.extensions = ExtensionRegistry(self.tools, clock=self.clock_obj, lexicon=self.kernel.lexicon)
        self.activity = ChatActivityLog()
        self.life_settings = LifeSettings.from_config(self.config.life)
        self.director = LifeDirector(
            self.extensions, self.kernel, self.activity, clock=self.clock_obj, settings=self.life_settings
        )
        self.router = router if router is not None else ModelRouter.from_config(self.config, wall=self.clock)
        self.model_ready = edge.model_configured and self.router.configured
        self.recent = RecentBuffer()
        self.deliveries = RecentDeliveries()
        self.why = WhyLog(self.app.why_per_chat)
        self.quiet: dict[str, QuietPeriod] = {}
        # Recently recalled messages: an episode already on its way must not answer one.
        self.recalled: OrderedDict[tuple[str, str], None] = OrderedDict()
        self.names = (self.config.persona.name, *self.config.persona.aliases)
        self.control_impl = Control(self)
        self.persistence = StatePersistence(self)
        self.driver = EpisodeDriver(self)
        self.loop = ActivationLoop(self)
        self.maintenance = Maintenance(self)
        # Made in start(): they need the store.
        self.store: SqliteStore
        self.writer: StoreWriter
        self.context: ContextRuntime
        self.memory: MemoryLayer | None = None
        self._task_group: TaskGroup | None = None
        self._started = False
        self._messages = 0
        self._disposers: list[Callable[[], None]] = []
        self._background = 0
        self._background_done = anyio.Event()
        self._background_done.set()

    # -- the gateway ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Between a finished start and the beginning of stop."""
        return self._started

    @property
    def control(self) -> RuntimeControl:
        return self.control_impl

    async def start(self, task_group: TaskGroup) -> None:
        from runtime.app.builtin_tools import register_builtin_tools
        from runtime.app.parts import open_store_parts

        if not self.model_ready:
            log.warning("no_model", problem=self.router.problem or "the edge found no chat model")
        await open_store_parts(self)
        self._disposers.append(self.outbound.on_sent(self._on_sent))
        try:
            register_builtin_tools(self)
            report = await self.persistence.restore(self.clock())
        except BaseException:
            # A start that fails must not leave the store's thread keeping the process alive.
            await self.store.close()
            raise
        self._task_group = task_group
        task_group.start_soon(self.writer.run)
        self.loop.start(task_group)
        self.maintenance.start(task_group)
        if self.memory is not None:
            task_group.start_soon(self._keep_serving, "memory_injector", self.memory.injector.serve)
        self._started = True
        self.loop.wake()
        log.info(
            "runtime_started",
            model=self.model_ready,
            shadow_mode=self.edge.shadow_mode,
            data_dir=str(self.data_dir),
            restored_events=report.events,
            waiting=report.waiting_episodes,
        )

    async def _keep_serving(self, name: str, serve: Callable[[], Awaitable[object]]) -> None:
        """Run a background service; one that fails is logged and restarted, never the whole bot."""
        while True:
            try:
                await serve()
                return
            except Exception:
                log.exception("service_failed", service=name)
                await anyio.sleep(SERVICE_RESTART_DELAY)

    async def stop(self) -> None:
        """Save and close within the edge's shutdown grace (10 s): each step has its own share, so the
        store is always closed and the process can exit."""
        if not self._started:
            return
        self._started = False
        self.loop.close()
        with anyio.move_on_after(STOP_EPISODES_WAIT):
            await self.loop.wait_idle()
        with anyio.move_on_after(STOP_BACKGROUND_WAIT):
            await self._background_done.wait()
        try:
            with anyio.move_on_after(STOP_SAVE_WAIT) as saving:
                await self.persistence.save()
            if saving.cancelled_caught:
                log.warning("final_save_cut_short", seconds=STOP_SAVE_WAIT)
        except Exception:
            log.exception("final_save_failed")
        try:
            with anyio.move_on_after(STOP_SESSIONS_WAIT) as scope:
                closed = await self.context.sessions.close_all(self.clock())
            if scope.cancelled_caught:
                # Those left open are marked interrupted at the next start and resumed from there.
                log.warning("sessions_close_cut_short", seconds=STOP_SESSIONS_WAIT)
            else:
                log.info("sessions_closed", count=len(closed))
        except Exception:
            log.exception("session_close_failed")
        for dispose in reversed(self._disposers):
            with contextlib.suppress(Exception):
                dispose()
        self._disposers.clear()
        self.scope.dispose()
        self.director.close()
        try:
            await self.writer.aclose(timeout=STOP_WRITER_WAIT)
        except Exception as exc:  # store.writes_lost has said how many and why
            log.warning("writer_close_failed", error=str(exc))
        await self.store.close()
        await self.router.aclose()
        log.info("runtime_stopped", messages=self._messages)

    async def on_message(self, message: ChatMessage) -> None:
        if not self._started:
            return
        if self.deliveries.repeated(message):
            # The same message delivered again (a re-sent event, a replayed journal): handled once.
            log.info("duplicate_delivery", chat_id=message.chat_id, message_id=message.message_id)
            return
        self._messages += 1
        result = self.kernel.ingest(message)
        thread_id = result.thread.thread.id
        stored = StoredMessage.from_chat_message(message, thread_id=thread_id)
        self.recent.add(stored)
        self.writer.offer(stored)
        if message.from_self:
            return
        self.why.note(result)
        self.driver.note_arrival(result)
        self.activity.note(message)
        self.room.note_message(message, thread_id, message.time)
        if message.text:
            self.learn_queue.append((message.chat_id, message.text[: self.config.lexicon.learn_max_chars]))
        if result.action is IngestAction.ACT_NOW:
            self.loop.start_episode(Activation(result.event, ActivationOutcome.READY, "forced"))
        else:
            # A scheduled activation may fall due before the loop's alarm; supersessions are reported.
            self.loop.poke(force=bool(result.superseded))

    async def on_notice(self, notice: Notice) -> None:
        if not self._started:
            return
        from plugins.greywind.notices import Recalled

        if isinstance(notice, Recalled):
            self.recalled[(notice.chat_id, notice.message_id)] = None
            while len(self.recalled) > RECALLED_KEPT:
                self.recalled.popitem(last=False)
            self.writer.offer(MessageRecalled(notice.chat_id, notice.message_id))
            self._withdraw(notice.chat_id, notice.message_id, notice.time)

    def _withdraw(self, chat_id: str, message_id: str, now: float) -> None:
        """A recalled message must not be answered: its pending activation goes."""
        for event in self.kernel.events.list(chat_id=chat_id):
            if message_id in event.evidence_message_ids and self.kernel.cancel(
                event.id, now, reason="recalled"
            ):
                log.info("activation_withdrawn", chat_id=chat_id, event_id=event.id, reason="recalled")

    # -- what the edge's inbound journal asks -----------------------------------------------------

    def store_progress(self) -> tuple[int, int]:
        """Writes handed to the store writer, and how many of them are done (committed, or rejected
        and logged). The writer commits in order: once the second reaches an earlier first, everything
        handed before then is in SQLite.

        Once the writer has dropped a write (its queue was full while storage failed), what it dropped
        is only in the inbound journal: from then on nothing counts as done, so the journal keeps every
        later segment and the next start re-delivers them (the ones stored meanwhile are skipped)."""
        stats = self.writer.statistics()
        if stats.dropped:
            return stats.enqueued, -1
        return stats.enqueued, stats.written + stats.rejected

    async def stored_already(self, messages: Sequence[ChatMessage]) -> list[bool]:
        """For each message, whether the store holds exactly it (same chat, id, sender and text): a
        journal replay skips those rather than ingest and answer them twice."""
        ids: dict[str, list[str]] = {}
        for message in messages:
            ids.setdefault(message.chat_id, []).append(message.message_id)
        found: set[tuple[str, str, str, str]] = set()
        for chat_id, message_ids in ids.items():
            for stored in await self.store.get_messages(chat_id, list(dict.fromkeys(message_ids))):
                found.add((chat_id, stored.message_id, stored.sender_id, stored.text))
        return [(m.chat_id, m.message_id, m.sender_id, m.text) in found for m in messages]

    # -- what the bot sent --------------------------------------------------------------------------

    def _on_sent(self, record: SentRecord) -> None:
        if record.shadow or not record.message_id:
            return
        from runtime.kernel.message import ChatKey

        key = ChatKey.parse(record.chat_id)
        message = ChatMessage(
            message_id=record.message_id,
            chat_kind=key.kind,
            chat_ident=key.ident,
            platform=key.platform,
            account=key.account,
            sender_id=SELF_SENDER,
            sender_name=self.config.persona.name,
            time=record.time,
            text=record.text,
            reply_to=record.reply_to,
            from_self=True,
        )
        assignment = self.kernel.note_outgoing(message)
        stored = StoredMessage.from_chat_message(message, thread_id=assignment.thread.id)
        self.recent.add(stored)
        self.deliveries.note(stored)
        self.writer.offer(stored)

    def loop_spawn(self, work: Awaitable[object]) -> None:
        """Run ``work`` in the lifespan's task group: bookkeeping (a store write, a session record)
        that must not hold the chat or the model's caller. :meth:`stop` waits for it."""

        async def run() -> None:
            try:
                await work
            except Exception:
                log.exception("background_work_failed")
            finally:
                self._background -= 1
                if not self._background:
                    self._background_done.set()

        if self._task_group is None:
            if inspect.iscoroutine(work):
                work.close()
            return
        if not self._background:
            self._background_done = anyio.Event()
        self._background += 1
        self._task_group.start_soon(run)

    # -- introspection ------------------------------------------------------------------------------

    def statistics(self) -> RuntimeStatistics:
        return RuntimeStatistics(
            started=self._started,
            messages=self._messages,
            learn_queue=len(self.learn_queue),
            loop=self.loop.statistics(),
            episodes=self.driver.statistics(),
            waiting=self.room.statistics(),
            maintenance=self.maintenance.statistics(),
            persistence=self.persistence.statistics(),
            kernel=self.kernel.statistics(),
        )


def build_runtime(edge: EdgeContext) -> Runtime:
    """The factory ``use_runtime`` takes."""
    return Runtime(edge)
