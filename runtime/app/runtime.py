"""The Runtime: the edge's :class:`~runtime.ports.RuntimeGateway`, composing every part.

Built by :func:`runtime.app.accounts.build_runtime` (``use_runtime(build_runtime)`` in ``bot.py``; one
per account with ``[[accounts]]``); it holds nothing but the
edge until :meth:`Runtime.start`, which has :func:`runtime.app.compose.compose` build the running bot
in the lifespan's task group: the parts in dependency order, the saved state restored
(:mod:`runtime.app.persistence`), the background work started — the store writer, the activation
loop (:mod:`runtime.app.loop`), the periodic jobs (:mod:`runtime.app.maintenance`), the memory
injector — all owned by one :class:`~runtime.lifetime.Lifetime`. :meth:`Runtime.stop` closes that
lifetime: episodes finish, the state is saved, open sessions close (their handoffs written), the
writer flushes and the store closes last, each step within its share of the edge's grace.

A message's path (:meth:`Runtime.on_message`) does no I/O beyond one queued store write, and never
waits for it to be committed: the kernel decides, the message joins the recent buffer, the ``why``
log, the chat-activity log and the waiting room's news; a forced message starts an episode at once, a
scheduled one may move the loop's alarm. Only when the writer's queue is crowded does a message wait
for room before it is taken (at most :data:`STORE_ROOM_WAIT`): a flood faster than the store then waits
at the edge, in the guard's bounded backlog, rather than lose its writes; a failing store is never
waited for (the write is dropped, counted and logged, and the edge's journal keeps the message).
Context packets are built, and the model called, only inside an episode (:mod:`runtime.app.episodes`).

With no model configured the runtime still runs everything up to the model: it ingests, decides and
logs what it would deliberate, and sends nothing (the edge is in shadow mode then).

Exceptions: none of its own cross the gateway. Start-up failures of the store (``runtime.store``'s
``StoreError`` family) propagate to the lifespan, which refuses to start; everything after start is
caught and logged where it happens (failures stay local).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog
from anyio.abc import TaskGroup

from runtime import stages
from runtime.app.compose import RunningBot, compose
from runtime.app.control import Control
from runtime.app.episodes import DriverStatistics, EpisodeDriver
from runtime.app.loop import ActivationLoop, LoopStatistics
from runtime.app.maintenance import Maintenance, MaintenanceStatistics
from runtime.app.persistence import PersistenceStatistics, StatePersistence
from runtime.app.siblings import SiblingAccounts
from runtime.commands import CommandRegistry, admin_registry
from runtime.context.setup import ContextRuntime
from runtime.episodes import WaitingStatistics
from runtime.extensions.listeners import MessageListeners
from runtime.extensions.loader import ExtensionLoader
from runtime.kernel.kernel import Kernel, KernelStatistics
from runtime.kernel.message import ChatKey, ChatMessage
from runtime.llm.router import ModelRouter
from runtime.mcp import McpHub
from runtime.memory.layers import MemoryLayer
from runtime.ports import (
    EdgeContext,
    Notice,
    NotTakenError,
    Outbound,
    Recalled,
    RuntimeControl,
    SentRecord,
)
from runtime.store.protocol import Store
from runtime.store.records import MessageRecalled, StoredMessage
from runtime.store.writer import StoreWriter
from runtime.tools import ToolRegistry

__all__ = ["Runtime", "RuntimeNotStartedError", "RuntimeStatistics"]

log = structlog.get_logger("greywind.runtime")

SELF_SENDER = "self"
RECALLED_KEPT = 4_096
# How long a message waits for room in a crowded store writer's queue before its write is offered
# anyway (and dropped if the queue is full).
STORE_ROOM_WAIT = 10.0


class RuntimeNotStartedError(RuntimeError):
    """A part of the running bot was asked for before :meth:`Runtime.start` made it."""


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


class Runtime:
    """See the module docstring."""

    def __init__(
        self,
        edge: EdgeContext,
        *,
        router: ModelRouter | None = None,
        siblings: SiblingAccounts | None = None,
    ) -> None:
        self.edge = edge
        self._router = router
        # Several accounts in one process: what another of them says is heard, never answered.
        self._siblings = siblings
        self._bot: RunningBot | None = None
        # The commands the edge answers: the built-in admin commands, and the extensions' once loaded.
        self.commands: CommandRegistry = admin_registry()
        self._started = False
        self._messages = 0

    @property
    def bot(self) -> RunningBot:
        """The running bot's parts (from :meth:`start` on)."""
        if self._bot is None:
            raise RuntimeNotStartedError("the runtime has not started")
        return self._bot

    # -- the parts introspection, the benchmarks and the tests read --------------------------------

    @property
    def kernel(self) -> Kernel:
        return self.bot.core.kernel

    @property
    def store(self) -> Store:
        return self.bot.storage.store

    @property
    def writer(self) -> StoreWriter:
        return self.bot.storage.writer

    @property
    def context(self) -> ContextRuntime:
        return self.bot.storage.context

    @property
    def memory(self) -> MemoryLayer | None:
        return self.bot.storage.memory

    @property
    def tools(self) -> ToolRegistry:
        return self.bot.core.tools

    @property
    def mcp(self) -> McpHub:
        """The MCP servers: ``snapshot()`` is their state, for the console."""
        return self.bot.mcp

    @property
    def extension_loader(self) -> ExtensionLoader:
        return self.bot.extensions

    @property
    def listeners(self) -> MessageListeners:
        return self.bot.core.listeners

    @property
    def router(self) -> ModelRouter:
        return self.bot.core.router

    @property
    def persistence(self) -> StatePersistence:
        return self.bot.persistence

    @property
    def driver(self) -> EpisodeDriver:
        return self.bot.driver

    @property
    def loop(self) -> ActivationLoop:
        return self.bot.loop

    @property
    def maintenance(self) -> Maintenance:
        return self.bot.maintenance

    @property
    def outbound(self) -> Outbound:
        return self.edge.outbound

    # -- the gateway ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Between a finished start and the beginning of stop."""
        return self._started

    @property
    def control(self) -> RuntimeControl:
        control: Control = self.bot.control
        return control

    async def start(self, task_group: TaskGroup) -> None:
        bot = self._bot = await compose(
            self.edge, task_group, on_sent=self._on_sent, commands=self.commands, router=self._router
        )
        self._started = True
        bot.loop.wake()
        log.info(
            "runtime_started",
            model=bot.core.model_ready,
            shadow_mode=self.edge.shadow_mode,
            data_dir=str(self.edge.data_dir),
            restored_events=bot.restored.events,
            waiting=bot.restored.waiting_episodes,
        )

    async def stop(self) -> None:
        """Close the running bot's lifetime: newest first, each step within its share of the edge's
        shutdown grace (10 s), so the store is always closed and the process can exit."""
        if not self._started:
            return
        self._started = False
        await self.bot.lifetime.aclose()
        log.info("runtime_stopped", messages=self._messages)

    async def on_message(self, message: ChatMessage) -> None:
        """Take one message; :class:`NotTakenError` when not running (before start, from stop on)."""
        if not self._started:
            raise NotTakenError("the runtime is not running")
        writer = self.bot.storage.writer
        if writer.crowded:  # a flood faster than the store: the message waits for room for its write
            await writer.room(STORE_ROOM_WAIT)
            if not self._started:
                raise NotTakenError("the runtime stopped while the message waited for the store")
        core = self.bot.core
        if core.deliveries.repeated(message):
            # The same message delivered again (a re-sent event, a replayed journal): handled once.
            log.info("duplicate_delivery", chat_id=message.chat_id, message_id=message.message_id)
            return
        self._messages += 1
        if message.addressed:
            stages.stamp(message.message_id, "runtime.entry")
        if self._siblings is not None and self._siblings.heard_from_sibling(message):
            self._hear_sibling(message)
            return
        result = core.kernel.ingest(message)
        thread_id = result.thread.thread.id
        stored = StoredMessage.from_chat_message(message, thread_id=thread_id)
        core.recent.add(stored)
        writer.offer(stored)
        is_bot = not message.from_self and core.kernel.bots.is_bot(message.sender_id)
        if not is_bot:
            core.questions.note(message, thread_id)  # another bot's question is never followed up
        if message.from_self:
            return
        core.listeners.notify(message)
        core.why.note(result)
        self.bot.driver.note_arrival(result)
        if not is_bot:
            core.activity.note(message)  # another bot's message keeps no chat alive
        core.room.note_message(message, thread_id, message.time)
        if message.addressed:
            stages.stamp(message.message_id, "runtime.ingested")
        if result.activation is not None:  # act now: the kernel made the ready activation
            self.bot.loop.start_episode(result.activation)
        else:
            # A scheduled activation may fall due before the loop's alarm; supersessions are reported.
            self.bot.loop.poke(force=bool(result.superseded))

    def _hear_sibling(self, message: ChatMessage) -> None:
        """Another account of this process spoke (:mod:`runtime.app.siblings`): its message joins its
        conversation thread, the recent buffer and the store; no attention, no episode."""
        core = self.bot.core
        thread_id = core.kernel.threads.assign(message).thread.id
        stored = StoredMessage.from_chat_message(message, thread_id=thread_id)
        core.recent.add(stored)
        self.bot.storage.writer.offer(stored)
        log.info("sibling_heard", chat_id=message.chat_id, sender_id=message.sender_id)

    async def on_notice(self, notice: Notice) -> None:
        if not self._started:
            return
        if isinstance(notice, Recalled):
            recalled = self.bot.core.recalled
            recalled[(notice.chat_id, notice.message_id)] = None
            while len(recalled) > RECALLED_KEPT:
                recalled.popitem(last=False)
            self.bot.storage.writer.offer(MessageRecalled(notice.chat_id, notice.message_id))
            self._withdraw(notice.chat_id, notice.message_id, notice.time)

    def _withdraw(self, chat_id: str, message_id: str, now: float) -> None:
        """A recalled message must not be answered: its pending activation goes."""
        kernel = self.bot.core.kernel
        for event in kernel.events.list(chat_id=chat_id):
            if message_id in event.evidence_message_ids and kernel.cancel(event.id, now, reason="recalled"):
                log.info("activation_withdrawn", chat_id=chat_id, event_id=event.id, reason="recalled")

    # -- what the edge's inbound journal asks -----------------------------------------------------

    def store_progress(self) -> tuple[int, int]:
        """Writes handed to the store writer, and how many of them are done (committed, or rejected
        and logged). The writer commits in order: once the second reaches an earlier first, everything
        handed before then is in SQLite.

        Once the writer has dropped a write (its queue was full while storage failed), what it dropped
        is only in the inbound journal: from then on nothing counts as done, so the journal keeps every
        later segment and the next start re-delivers them (the ones stored meanwhile are skipped)."""
        handed, done, dropped = self.bot.storage.writer.progress()
        return (handed, -1) if dropped else (handed, done)

    async def stored_already(self, messages: Sequence[ChatMessage]) -> list[bool]:
        """For each message, whether the store holds exactly it (same chat, id, sender and text): a
        journal replay skips those rather than ingest and answer them twice."""
        ids: dict[str, list[str]] = {}
        for message in messages:
            ids.setdefault(message.chat_id, []).append(message.message_id)
        found: set[tuple[str, str, str, str]] = set()
        for chat_id, message_ids in ids.items():
            for stored in await self.bot.storage.store.get_messages(
                chat_id, list(dict.fromkeys(message_ids))
            ):
                found.add((chat_id, stored.message_id, stored.sender_id, stored.text))
        return [(m.chat_id, m.message_id, m.sender_id, m.text) in found for m in messages]

    # -- what the bot sent --------------------------------------------------------------------------

    def _on_sent(self, record: SentRecord) -> None:
        if record.shadow or not record.message_id:
            return
        core = self.bot.core
        key = ChatKey.parse(record.chat_id)
        message = ChatMessage(
            message_id=record.message_id,
            chat_kind=key.kind,
            chat_ident=key.ident,
            platform=key.platform,
            account=key.account,
            sender_id=SELF_SENDER,
            sender_name=core.persona.name,
            # On the runtime's time line (the edge's clock may hold it back while messages wait
            # there): not later than the messages heard after it.
            time=min(record.time, core.clock()),
            text=record.text,
            reply_to=record.reply_to,
            from_self=True,
        )
        if core.deliveries.repeated(message):
            # Its echo came first (an implementation may report the bot's own message before it
            # answers the send): the echo took it in, once.
            return
        assignment = core.kernel.note_outgoing(message)
        core.questions.note(message, assignment.thread.id)
        stored = StoredMessage.from_chat_message(message, thread_id=assignment.thread.id)
        core.recent.add(stored)
        self.bot.storage.writer.offer(stored)

    # -- introspection ------------------------------------------------------------------------------

    def statistics(self) -> RuntimeStatistics:
        bot = self.bot
        return RuntimeStatistics(
            started=self._started,
            messages=self._messages,
            learn_queue=bot.core.kernel.pending_learning(),
            loop=bot.loop.statistics(),
            episodes=bot.driver.statistics(),
            waiting=bot.core.room.statistics(),
            maintenance=bot.maintenance.statistics(),
            persistence=bot.persistence.statistics(),
            kernel=bot.core.kernel.statistics(),
        )
