"""The edge for one run of the driver: conversion, commands, gates, outbound, the runtime gateway.

:class:`Edge` holds everything the plugin needs between start-up and shutdown and is driven by the
plugin's event preprocessor (``handle_message``, ``handle_notice``) and lifespan hooks (``start``,
``stop``). It imports no NoneBot machinery beyond the OneBot event models, so tests build it directly.

A message's path: convert (never raises; a failure is logged and counted) -> a declared command (any
from a superuser, one declared for members from anyone; addressed to the bot, an unknown command or
one the sender may not run gets a plain refusal) is answered and goes no further -> the unmute
phrase lifts a quiet period -> a mute word addressed to the bot opens one (and the message reaches the
runtime as not addressed, so it costs no model call) -> the message is queued for the gateway on its
chat's turn (addressed messages, pokes and commands in the dispatcher's priority line, served first).
The phrase lifts only a quiet period a member asked for; a superuser's ``/mute`` is lifted by
``/unmute`` alone.

Every message frame is in the inbound journal (:mod:`plugins.greywind.journal`) from the moment the
frame guard reads it; the edge settles it there once the message's job has handed it to the runtime,
and at start re-delivers what an earlier run left (:mod:`plugins.greywind.journal_replay`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup
from nonebot.adapters.onebot.v11 import MessageEvent, NoticeEvent, PokeNotifyEvent

from plugins.greywind.accounts import OWNERS_FILE, ChatOwners
from plugins.greywind.commands import Command, Usage, is_mute_request, is_unmute_request
from plugins.greywind.convert import PLATFORM, AddressingRules, Inbound, convert_message, convert_poke
from plugins.greywind.dispatch import Dispatcher, DispatcherClosedError, DispatcherStatistics, Job
from plugins.greywind.gateway import (
    EdgeContext,
    RuntimeFactory,
    RuntimeGateway,
    commands_of,
    control_of,
    current_factory,
)
from plugins.greywind.heard import HeardClock
from plugins.greywind.journal import JOURNAL_DIR, InboundJournal, JournalKey, JournalStatistics
from plugins.greywind.journal_replay import JournalReplay, event_key
from plugins.greywind.looplag import (
    CollectorPauses,
    CollectorTuning,
    FullCollections,
    LoopLagMonitor,
    LoopLagStatistics,
    YoungCollections,
)
from plugins.greywind.notices import apply_to_gates, interpret_notice
from plugins.greywind.onebot_guard import FrameGuard, FrameGuardStatistics, GuardedAdapter, frame_received_at
from plugins.greywind.outbound import (
    Account,
    BotApi,
    ChatGates,
    Outbound,
    OutboundStatistics,
    TokenBucket,
)
from plugins.greywind.own_messages import own_report
from plugins.greywind.restriction import RestrictionCircuits
from runtime import stages
from runtime.commands import FAILED, CommandCall
from runtime.config import GreyWindConfig
from runtime.config.accounts import account_config
from runtime.kernel.message import ChatKey, ChatMessage
from runtime.llm.errors import NotConfiguredError
from runtime.llm.router import apply_env_overrides
from runtime.ports import NotTakenError, StoresInbound
from runtime.quiet import QUIET_ASKED, QUIET_IMPOSED
from runtime.traces.memory import MemoryTrace
from runtime.traces.stalls import StallTrace
from runtime.urgency import AddressedWork

__all__ = ["Edge", "EdgeStatistics", "model_hint", "model_is_configured"]

log = structlog.get_logger("greywind.edge")

STOP_GRACE_SECONDS = 5.0
# How often the journal looks for segments the store has committed.
JOURNAL_RETIRE_SECONDS = 1.0
JOURNAL_SEGMENT_BYTES = 4 * 1024 * 1024


def model_is_configured(config: GreyWindConfig, env: Mapping[str, str] | None = None) -> bool:
    """A chat model can be called: the model router, given the GREYWIND_LLM_* variables, finds a
    provider with the chat role (the same rule the runtime applies when it builds its router)."""
    env = os.environ if env is None else env
    try:
        models = apply_env_overrides(config.models, env)
    except NotConfiguredError:
        return False
    return any("chat" in provider.roles for provider in models.providers)


def model_hint(config_path: Path) -> str:
    return (
        "no model configured: set GREYWIND_LLM_BASE_URL and GREYWIND_LLM_MODEL (and GREYWIND_LLM_API_KEY "
        f'if the endpoint needs one), or add a [[models.providers]] table with roles = ["chat"] to '
        f"{config_path}. Running in shadow mode: messages are read and decided on, nothing is sent."
    )


@dataclass(frozen=True, slots=True)
class EdgeStatistics:
    messages: int
    truncated: int
    convert_failed: int
    commands: int
    quiet_requests: int
    notices: int
    dropped_at_shutdown: int
    connected_bots: tuple[str, ...]
    dispatcher: DispatcherStatistics
    outbound: OutboundStatistics
    frames: FrameGuardStatistics | None
    loop_lag: LoopLagStatistics
    journal: JournalStatistics | None = None


class Edge:
    def __init__(
        self,
        config: GreyWindConfig,
        *,
        config_path: Path,
        data_dir: Path,
        superusers: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
        factory: RuntimeFactory | None = None,
        frames: Callable[[], FrameGuardStatistics] | None = None,
        frames_renamed: Callable[[tuple[str, ...]], None] | None = None,
        stop_grace: float = STOP_GRACE_SECONDS,
    ) -> None:
        self.config = config
        self.clock = clock
        # The runtime's clock: how far the bot has heard (held back while messages wait).
        self.heard = HeardClock(clock, self._oldest_waiting)
        self._frames = frames
        self._frames_renamed = frames_renamed
        self._stop_grace = stop_grace
        self.superusers = frozenset(_plain_user_id(user) for user in superusers)
        self._env = os.environ if env is None else env
        self.model_configured = model_is_configured(config, env)
        self.shadow_mode = config.bot.shadow_mode or not self.model_configured
        self._bots: dict[str, BotApi] = {}
        self._shutting_down = False
        self.owners = ChatOwners(data_dir / OWNERS_FILE)
        self.gates = ChatGates()
        self.outbound = Outbound(
            bot=self._account_for,
            bucket=TokenBucket(config.outbound.max_per_minute, config.outbound.burst),
            buckets=_account_buckets(config),
            gates=self.gates,
            clock=clock,
            max_reply_chars=config.bot.max_reply_chars,
            split_at=config.bot.split_at,
            retry_delay=config.outbound.retry_delay_ms / 1000,
            send_timeout=config.outbound.send_timeout_ms / 1000,
            shadow_mode=self.shadow_mode,
            circuits=RestrictionCircuits(
                after_failures=config.outbound.restriction_failures,
                pause=config.outbound.restriction_pause_ms / 1000,
                max_pause=config.outbound.restriction_pause_max_ms / 1000,
                clock=clock,
            ),
        )
        self.dispatcher = Dispatcher(workers=config.bot.max_inflight)
        self.addressed = AddressedWork()
        self.loop_lag = LoopLagMonitor()
        self.collector = CollectorPauses()
        self.collector_tuning = CollectorTuning()
        self.young_collections = YoungCollections(lambda: self.dispatcher.submitted)
        self.full_collections = FullCollections(lambda: self.dispatcher.submitted)
        self.stall_trace = StallTrace.from_env(self._env)  # off unless GREYWIND_STALL_TRACE is set
        self.memory_trace = MemoryTrace.from_env(self._env)  # off unless GREYWIND_MEMORY_TRACE is set
        self.context = EdgeContext(
            config=config,
            config_path=config_path,
            data_dir=data_dir,
            outbound=self.outbound,
            shadow_mode=self.shadow_mode,
            model_configured=self.model_configured,
            superusers=self.superusers,
            clock=self.heard,
            clock_lag=self.heard.lag,
            edge_status=self.status_text,
            edge_summary=self.summary_text,
            rename=self.rename,
            addressed=self.addressed,
            chat_bindings=lambda: self.owners.bindings(PLATFORM),
            rename_account=self.rename_account,
        )
        self.gateway: RuntimeGateway = (factory or current_factory())(self.context)
        self._names = (config.persona.name, *config.persona.aliases)
        # [[accounts]]: each account answers to its own persona's names.
        self._account_names: dict[str, tuple[str, ...]] = {}
        for account in config.account_ids():
            persona = account_config(config, account).persona
            self._account_names[account] = (persona.name, *persona.aliases)
        self._rules: dict[str, AddressingRules] = {}
        self._task_group: TaskGroup | None = None
        self._messages = self._truncated = self._convert_failed = 0
        self._commands = self._quiet_requests = self._notices = self._dropped = 0
        self.journal: InboundJournal | None = None
        if config.bot.journal_mb:
            max_bytes = config.bot.journal_mb * 1024 * 1024
            self.journal = InboundJournal(
                data_dir / JOURNAL_DIR,
                segment_bytes=min(JOURNAL_SEGMENT_BYTES, max_bytes),
                max_bytes=max_bytes,
                # Chosen once: a protocol check per settled message costs more than the settling.
                progress=self.gateway.store_progress
                if isinstance(self.gateway, StoresInbound)
                else _nothing_stored,
                clock=clock,
            )
        self.replay = JournalReplay(self, answer_within=config.bot.replay_answer_minutes * 60)

    # -- lifespan -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the task group, start the workers and the gateway."""
        if not self.model_configured:
            log.warning("no_model", hint=model_hint(self.context.config_path))
        elif self.shadow_mode:
            log.warning("shadow_mode", detail="bot.shadow_mode is on: nothing will be sent")
        self.context.data_dir.mkdir(parents=True, exist_ok=True)
        FrameGuard.clock = self.clock  # frames are dated on arrival by the clock messages are dated by
        FrameGuard.on_own_message = self._heard_own_frame
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        self.dispatcher.start(task_group)
        await self.gateway.start(_LocalFailures(task_group))  # type: ignore[arg-type]
        if self.journal is not None:
            # Before serving: what an earlier run read but did not store reaches the runtime first.
            try:
                await self.replay.run(self.journal.open())
            except Exception:
                # What was not handed over stays unsettled in the journal, for the next start.
                log.exception("journal_replay_failed")
            FrameGuard.on_event_frame = self.journal.append
            GuardedAdapter.on_not_a_message = self.journal.settle_frame
            task_group.start_soon(self._retire_journal, name="greywind-journal")
        self.collector_tuning.apply()  # start-up is done: what it built lives as long as the process
        # Stalls and collections from here on, while serving (start-up's one collection is not one).
        task_group.start_soon(self.loop_lag.run, name="greywind-loop-lag")
        task_group.start_soon(self.young_collections.run, name="greywind-young-collections")
        task_group.start_soon(self.full_collections.run, name="greywind-full-collections")
        if self.stall_trace is not None:
            task_group.start_soon(self.stall_trace.run, name="greywind-stall-trace")
        if self.memory_trace is not None:
            task_group.start_soon(self.memory_trace.run, name="greywind-memory-trace")
        self.collector.install()
        log.info(
            "edge_started",
            shadow_mode=self.shadow_mode,
            data_dir=str(self.context.data_dir),
            frozen_objects=self.collector_tuning.frozen,
        )

    def announce_ready(self, listen: str) -> None:
        """The one start banner: where the bot listens, which model speaks, whether it may, in which
        groups (the config's; ``/enable`` and ``/disable`` refine it per chat), who is admin."""
        groups = self.config.groups
        lives = (
            f"only groups {', '.join(groups.allow)}"
            if groups.allow
            else "every group its accounts have joined"
        ) + (f", except {', '.join(groups.deny)}" if groups.deny else "")
        chat_models: list[str] = []
        if self.model_configured:
            models = apply_env_overrides(self.config.models, self._env)
            chat_models = [f"{p.name}: {p.model}" for p in models.providers if "chat" in p.roles]
        log.info(
            "ready",
            listen=listen,
            model=", ".join(chat_models)
            or "none: shadow mode; set GREYWIND_LLM_BASE_URL and GREYWIND_LLM_MODEL "
            f"(or add [[models.providers]] to {self.context.config_path})",
            shadow_mode=self.shadow_mode,
            groups=lives,
            admin=f"superusers: {len(self.superusers)}"
            if self.superusers
            else "no superusers: admin commands are off",
        )

    async def stop(self) -> None:
        """Stop taking messages, let queued ones finish (briefly), stop the gateway, end the task group."""
        self.dispatcher.close()
        self.collector.uninstall()
        self.collector_tuning.undo()
        with anyio.move_on_after(self._stop_grace):
            await self.dispatcher.wait_idle()
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self._stop_grace * 2):
                await self.gateway.stop()
        except Exception:
            log.exception("gateway_stop_failed")
        if self.journal is not None:
            # After the store's final flush: what is committed leaves the journal.
            FrameGuard.on_event_frame = GuardedAdapter.on_not_a_message = None
            self.journal.close()
        FrameGuard.clock = time.time
        FrameGuard.on_own_message = None
        task_group, self._task_group = self._task_group, None
        if task_group is not None:
            task_group.cancel_scope.cancel()
            try:
                await task_group.__aexit__(None, None, None)
            except Exception:
                log.exception("task_group_failed_at_stop")
        log.info("edge_stopped", **_flat(self.statistics()))

    # -- bots -----------------------------------------------------------------------------------

    def bot_connected(self, self_id: str, bot: BotApi) -> None:
        self._bots[self_id] = bot
        log.info("bot_connected", self_id=self_id)
        if self.replay.waiting and self._task_group is not None:
            self._task_group.start_soon(self.replay.connected, self_id, name="greywind-replay")

    def note_shutdown(self) -> None:
        """The process is stopping (SIGTERM, Ctrl-C): connections closing now are expected."""
        self._shutting_down = True

    def bot_disconnected(self, self_id: str) -> None:
        self._bots.pop(self_id, None)
        if self._shutting_down:
            log.info("bot_disconnected", self_id=self_id, reason="shutdown")
        else:
            log.warning("bot_disconnected", self_id=self_id)

    def _account_for(self, chat_id: str) -> Account | None:
        """The account ``chat_id`` names, while it is connected; never another one. An unbound chat
        (its account unknown) goes through the only account, when only one is connected."""
        key = ChatKey.parse(chat_id)
        if not key.bound:
            if len(self._bots) == 1:
                return Account(*next(iter(self._bots.items())))
            return None
        bot = self._bots.get(key.account) if key.platform == PLATFORM else None
        return Account(key.account, bot) if bot is not None else None

    def rename(self, names: tuple[str, ...]) -> None:
        """Address by these names from the next message on (the persona was reloaded)."""
        self._names = names
        self._rules.clear()  # rebuilt per bot on the next message, with the new names
        if self._frames_renamed is not None:
            # The frame guard's priority lane follows too (with every account's own names).
            every = (*names, *(n for own in self._account_names.values() for n in own))
            self._frames_renamed(tuple(dict.fromkeys(every)))

    def rename_account(self, account: str, names: tuple[str, ...]) -> None:
        """Address ``account`` by these names from the next message on (its persona was reloaded)."""
        self._account_names[account] = names
        self._rules.pop(account, None)
        if self._frames_renamed is not None:
            every = (*self._names, *(n for names in self._account_names.values() for n in names))
            self._frames_renamed(tuple(dict.fromkeys(every)))

    def names_for(self, self_id: str) -> tuple[str, ...]:
        """The names ``self_id`` answers to: its own persona's ([[accounts]]), else the shared one."""
        return self._account_names.get(self_id, self._names)

    def _rules_for(self, self_id: str) -> AddressingRules:
        rules = self._rules.get(self_id)
        if rules is None:
            rules = self._rules[self_id] = AddressingRules(
                self_id=self_id,
                names=self.names_for(self_id),
                max_chars=self.config.bot.max_message_chars,
                is_own_message=self.outbound.is_own_message,
            )
        return rules

    # -- events ---------------------------------------------------------------------------------

    async def handle_message(self, event: MessageEvent) -> None:
        key = event_key(event) if self.journal is not None else None
        try:
            inbound = convert_message(event, self._rules_for(str(event.self_id)), now=self._arrival())
        except Exception:
            self._convert_failed += 1
            log.exception("convert_failed", message_id=getattr(event, "message_id", None))
            self._settle(key)
            return
        if inbound.message.from_self:
            inbound = await self._attributed(inbound)
        await self.deliver(inbound, str(event.self_id), key)

    async def _attributed(self, inbound: Inbound) -> Inbound:
        """The account's own message, heard live: one this bot did not send (its owner typed it on
        another device, another program sent it) is marked ``sent_elsewhere``, and the model will not
        read it as its own words. Heard while the bot sends to that chat, it is judged once those
        sends are answered. (A journal replay after a restart cannot tell: it stays the bot's.)"""
        message = inbound.message
        if await self.outbound.sent_it_once_answered(message.chat_id, message.message_id, message.text):
            return inbound
        log.info("own_message_sent_elsewhere", chat_id=message.chat_id, message_id=message.message_id)
        return replace(inbound, message=replace(message, sent_elsewhere=True))

    def _arrival(self) -> float:
        """When the event being handled arrived: its frame's time off the socket (a backlog's
        messages keep the pace they came at), else now."""
        received = frame_received_at.get()
        return self.clock() if received is None else received

    def command_of(self, inbound: Inbound) -> Command | Usage | None:
        """The declared command ``inbound`` is, if it is one its sender may run (a superuser any; a
        member only those declared for members); addressed to the bot, an unknown command or one the
        sender may not run is a plain refusal (a :class:`Usage`)."""
        message = inbound.message
        prefix = self.config.bot.command_prefix
        if message.from_self or not inbound.body.lstrip().startswith(prefix):
            return None  # neither a command nor written as one (most messages: no registry asked)
        registry = commands_of(self.gateway, message.chat_id)
        superuser = message.sender_id in self.superusers
        command = registry.parse(inbound.body, chat_id=message.chat_id, prefix=prefix, superuser=superuser)
        if command is None and message.addressed:
            # Written as a command to the bot, but none it takes from this sender: a plain answer,
            # not a model call that would invent one. Unaddressed, it may be another bot's command.
            return registry.refusal(inbound.body, prefix=prefix, superuser=superuser)
        return command

    async def deliver(self, inbound: Inbound, account: str, key: JournalKey | None = None) -> None:
        """A converted message's path (commands, quiet words, the gateway), heard through ``account``;
        ``key`` is settled in the journal once its job is done."""
        self._messages += 1
        message = inbound.message
        self.owners.claim(message.chat_id, account)
        if inbound.truncated:
            self._truncated += 1
            log.info("message_truncated", chat_id=message.chat_id, message_id=message.message_id)
        command = self.command_of(inbound)
        if command is not None:
            self._commands += 1
            job = partial(self._run_command, command, message)
            await self.submit_settled(message.chat_id, job, key, priority=True, since=message.time)
            return
        if message.from_self:
            # The bot's own message heard back: a reply to it is a reply to the bot, even one that
            # comes before the platform has confirmed the send, and a send the platform did not
            # answer in time went out. The frame guard has told the outbound as it read the frame;
            # a message that did not come through it (a journal replay) tells it here.
            self.outbound.heard_own(message.chat_id, message.message_id, message.text, message.time)
        else:
            message = await self._quiet_words(message, inbound.body)
        if message.addressed:
            # Addressed messages are the ones that cost a model call: each gets one line; chatter none.
            self._log_addressed(message, inbound.how_addressed)
            stages.stamp(message.message_id, "edge.submit")
        job = partial(self.gateway.on_message, message)
        await self.submit_settled(message.chat_id, job, key, priority=message.addressed, since=message.time)

    def _heard_own_frame(self, frame: dict[str, Any], at: float) -> None:
        """The bot's own message reported back, as the frame guard reads it: the outbound hears it at
        once (see ``own_messages``); the edge takes the message itself in its turn, as any other."""
        try:
            report = own_report(frame)
            if report is not None:
                self.outbound.heard_own(report.chat_id, report.message_id, report.text, at)
        except Exception:  # the guard's reader must go on
            log.exception("own_report_failed", message_id=frame.get("message_id"))

    def _log_addressed(self, message: ChatMessage, how: str) -> None:
        log.info(
            "addressed",
            chat_id=message.chat_id,
            message_id=message.message_id,
            sender_id=message.sender_id,
            how=how,
            chars=len(message.text),
        )

    async def _quiet_words(self, message: ChatMessage, body: str) -> ChatMessage:
        chat = message.chat_id
        bot_config = self.config.bot
        now = self.clock()
        verdict = self.gates.verdict(chat, now)
        if verdict.reason == "quiet" and is_unmute_request(
            message.text, bot_config.unmute_phrase_for(self.names_for(message.account)[0])
        ):
            # A member lifts only a quiet period members asked for; a superuser's /mute stays.
            if self.gates.unquiet(chat, only=QUIET_ASKED):
                log.info("quiet_lifted", chat_id=chat, by=message.sender_id)
                job = partial(self._tell_control_unmute, chat, message.sender_id)
                await self._submit(chat, job, priority=True)
            else:
                log.info("quiet_lift_refused", chat_id=chat, by=message.sender_id, kind=verdict.kind)
            return message
        if message.addressed and is_mute_request(body, bot_config.mute_words):
            self._quiet_requests += 1
            until = now + bot_config.quiet_minutes * 60
            if not self.gates.quiet(chat, until, QUIET_ASKED, now=now):
                return replace(message, addressed=False)  # a superuser's mute is already in force
            log.info("quiet_requested", chat_id=chat, by=message.sender_id, minutes=bot_config.quiet_minutes)
            await self._submit(chat, partial(self._tell_control_mute, chat, until, message), priority=True)
            # The runtime still records the message, but it no longer calls for an answer.
            return replace(message, addressed=False)
        return message

    async def _tell_control_mute(self, chat: str, until: float, message: ChatMessage) -> None:
        control = control_of(self.gateway, chat)
        text = await control.mute(chat, until, by=message.sender_id, reason="mute_word")
        if text:
            await self.outbound.send(chat, text, reply_to=message.message_id, admin=True)

    async def _tell_control_unmute(self, chat: str, by: str) -> None:
        text = await control_of(self.gateway, chat).unmute(chat, by=by, reason="phrase")
        if text:
            await self.outbound.send(chat, text)

    async def _run_command(self, command: Command | Usage, message: ChatMessage) -> None:
        now = self.clock()
        if isinstance(command, Command) and command.name == "mute":
            until = now + command.seconds if command.seconds else None
            self.gates.quiet(command.chat_id, until, QUIET_IMPOSED)
        elif isinstance(command, Command) and command.name == "unmute":
            self.gates.unquiet(command.chat_id)
        name = command.name if isinstance(command, Command) else "usage"
        log.info("command", name=name, by=message.sender_id, chat_id=message.chat_id)
        call = CommandCall(
            control_of(self.gateway, message.chat_id),
            now=now,
            by=message.sender_id,
            origin=message.chat_id,
            reply_to=message.reply_to,
        )
        try:
            text = await commands_of(self.gateway, message.chat_id).dispatch(command, call)
        except Exception:
            log.exception("command_failed", name=name)
            text = FAILED
        if text:
            # A superuser's answer passes a quiet period; a member's command is answered like a reply.
            admin = message.sender_id in self.superusers
            await self.outbound.send(message.chat_id, text, reply_to=message.message_id, admin=admin)

    async def handle_notice(self, event: NoticeEvent) -> None:
        now = self._arrival()
        self_id = str(event.self_id)
        try:
            if isinstance(event, PokeNotifyEvent):
                poke = convert_poke(event, self._rules_for(self_id), now=now)
                if poke is not None:
                    self._messages += 1
                    self.owners.claim(poke.chat_id, self_id)
                    self._log_addressed(poke, "poke")
                    job = partial(self.gateway.on_message, poke)
                    await self.submit_settled(poke.chat_id, job, None, priority=True)
                return
            notice = interpret_notice(event, self_id, now=now)
        except Exception:
            self._convert_failed += 1
            log.exception("notice_failed", notice_type=getattr(event, "notice_type", None))
            return
        if notice is None:
            return
        self._notices += 1
        apply_to_gates(notice, self.gates)  # the notice's chat is the account's own: others are untouched
        log.info("notice", kind=type(notice).__name__, chat_id=notice.chat_id, account=self_id)
        await self._submit(notice.chat_id, partial(self.gateway.on_notice, notice))

    async def _submit(
        self, chat_id: str, job: Job, *, priority: bool = False, since: float | None = None
    ) -> None:
        """Queue ``job`` on its chat's turn; ``priority`` (addressed, a command) goes first; ``since``:
        the message's date, for :meth:`_oldest_waiting`."""
        try:
            await self.dispatcher.submit(chat_id, job, priority=priority, since=since)
        except DispatcherClosedError:
            self._dropped += 1

    async def submit_settled(
        self,
        chat_id: str,
        job: Job,
        key: JournalKey | None,
        *,
        priority: bool = False,
        since: float | None = None,
    ) -> None:
        """Queue ``job`` (one that hands a message to the runtime); once it has run, the journal's
        frame ``key`` is settled. A message dropped at shutdown stays unsettled: the journal keeps it
        for the next start; so does one the runtime did not take (``NotTakenError``: it had stopped)."""

        async def then_settle() -> None:
            try:
                await job()
            except NotTakenError:
                self._dropped += 1  # counted with the ones dropped at shutdown; not settled
                return
            except BaseException:
                self._settle(key)  # a job that fails must not keep its frame for every next start
                raise
            self._settle(key)

        await self._submit(chat_id, then_settle, priority=priority, since=since)

    def _oldest_waiting(self) -> float | None:
        """When the oldest message not yet handed to the runtime arrived: in a frame the guard
        holds, or converted and queued for its chat's turn (None: nothing waits)."""
        waiting = (GuardedAdapter.oldest_waiting(), self.dispatcher.oldest_since())
        return min((at for at in waiting if at is not None), default=None)

    def _settle(self, key: JournalKey | None) -> None:
        if self.journal is not None:
            self.journal.settle(key)

    async def _retire_journal(self) -> None:
        assert self.journal is not None
        while True:
            await anyio.sleep(JOURNAL_RETIRE_SECONDS)
            self.journal.retire()

    # -- introspection --------------------------------------------------------------------------

    def statistics(self) -> EdgeStatistics:
        return EdgeStatistics(
            messages=self._messages,
            truncated=self._truncated,
            convert_failed=self._convert_failed,
            commands=self._commands,
            quiet_requests=self._quiet_requests,
            notices=self._notices,
            dropped_at_shutdown=self._dropped,
            connected_bots=tuple(self._bots),
            dispatcher=self.dispatcher.statistics(),
            outbound=self.outbound.statistics(),
            frames=self._frames() if self._frames is not None else None,
            loop_lag=self.loop_lag.statistics(),
            journal=self.journal.statistics() if self.journal is not None else None,
        )

    def status_text(self) -> str:
        stats = self.statistics()
        out = stats.outbound
        lines = [
            f"收到消息 {stats.messages}（截断 {stats.truncated}，转换失败 {stats.convert_failed}）",
            f"队列 {stats.dispatcher.queued}，处理中 {stats.dispatcher.running}，"
            f"失败 {stats.dispatcher.failed}，排队 p50 {stats.dispatcher.wait_p50_ms:.0f} ms "
            f"p95 {stats.dispatcher.wait_p95_ms:.0f} ms",
            f"已发送 {out.sent_parts} 条，影子 {out.shadow_parts} 条，发送失败 {out.failed_sends}，"
            f"限速 {out.rate.rate_per_minute:.0f}/分钟（余 {out.rate.tokens:.1f}）",
        ]
        lines.append(self._accounts_line())
        if stats.frames is not None:
            frames = stats.frames
            lines.append(
                f"事件积压 {frames.backlog}（优先 {frames.backlog_priority}，最多 {frames.max_backlog}），"
                f"因积压丢弃 {frames.dropped}（优先 {frames.dropped_priority}），非 JSON 帧 {frames.not_json}"
            )
        journal = stats.journal
        if journal is not None and (journal.unsettled or journal.write_failures or journal.evicted):
            lines.append(
                f"入站日志 未入库 {journal.unsettled} 条（{journal.segments} 段，"
                f"{journal.bytes / 1e6:.1f} MB），写失败 {journal.write_failures}"
                + (f"（{journal.last_error}）" if journal.write_failures else "")
                + (f"，超限丢弃保护 {journal.evicted} 条" if journal.evicted else "")
            )
        lag = stats.loop_lag
        lines.append(
            f"事件循环延迟 p50 {lag.p50_ms:.0f} ms p95 {lag.p95_ms:.0f} ms，最长 {lag.max_ms:.0f} ms"
            f"（启动以来 {lag.worst_ms:.0f} ms）；完整垃圾回收 {self.collector.full} 次，"
            f"最长 {self.collector.longest_ms:.0f} ms"
            f"（等安静时做，流量中做了 {self.full_collections.forced} 次）；"
            f"年轻代回收 {self.collector.young} 次，"
            f"最长 {self.collector.young_longest_ms:.0f} ms"
        )
        closed = self.gates.closed(self.clock())
        if closed:
            lines.append("不发言：" + "，".join(f"{chat} {v.label}" for chat, v in closed.items()))
        return "\n".join(lines)

    def summary_text(self) -> str:
        """The short form of :meth:`status_text`: the accounts, the groups heard, the closed chats."""
        lines = [self._accounts_line() + f"；群 {self.owners.group_count()} 个"]
        closed = self.gates.closed(self.clock())
        if closed:
            lines.append(f"不发言：{len(closed)} 个聊天")
        return "\n".join(lines)

    def _accounts_line(self) -> str:
        owned = self.owners.chats_per_account()
        circuits = {c.account: c for c in self.outbound.circuits.statistics()}
        accounts = sorted(set(self._bots) | set(owned) | set(circuits))
        if not accounts:
            return "账号：未连接"
        now = self.clock()
        shown = []
        for account in accounts:
            state = "" if account in self._bots else "未连接，"
            circuit = circuits.get(account)
            if circuit is not None and circuit.paused_until is not None:
                left = max(0, round(circuit.paused_until - now))
                state += (
                    f"疑似风控，暂停发送（第 {circuit.pauses} 次，{circuit.pause_seconds:.0f} 秒，"
                    f"还剩 {left} 秒，已拒发 {circuit.refused}），"
                )
            elif circuit is not None and circuit.total_pauses:
                state += f"曾暂停 {circuit.total_pauses} 次，"
            shown.append(f"{account}（{state}{owned.get(account, 0)} 个聊天）")
        return "账号：" + "，".join(shown)


class _LocalFailures:
    """The lifespan's task group as the runtime sees it: a background task that raises is logged and
    ends alone, instead of cancelling the task group and with it every worker of the edge."""

    def __init__(self, task_group: TaskGroup) -> None:
        self._task_group = task_group

    def __getattr__(self, name: str) -> Any:
        return getattr(self._task_group, name)

    def start_soon(self, func: Callable[..., Awaitable[Any]], *args: Any, name: object = None) -> None:
        async def contained() -> None:
            try:
                await func(*args)
            except Exception:
                log.exception("background_task_failed", task=str(name or getattr(func, "__name__", func)))

        self._task_group.start_soon(contained, name=name or getattr(func, "__name__", None))


def _nothing_stored() -> tuple[int, int]:
    """The journal's progress from a gateway that does not store: (handed, committed) = (0, 0)."""
    return (0, 0)


def _account_buckets(config: GreyWindConfig) -> dict[str, TokenBucket]:
    """[[accounts]]: each account's own send rate (its ``outbound`` over the shared one)."""
    buckets: dict[str, TokenBucket] = {}
    for account in config.account_ids():
        outbound = account_config(config, account).outbound
        buckets[account] = TokenBucket(outbound.max_per_minute, outbound.burst)
    return buckets


def _plain_user_id(user: str) -> str:
    # NoneBot accepts "123" and "onebot:123" in SUPERUSERS.
    return user.rsplit(":", 1)[-1].strip()


def _flat(stats: EdgeStatistics) -> dict[str, object]:
    return {
        "messages": stats.messages,
        "convert_failed": stats.convert_failed,
        "dropped_at_shutdown": stats.dropped_at_shutdown,
        "sent_parts": stats.outbound.sent_parts,
        "shadow_parts": stats.outbound.shadow_parts,
        "jobs_failed": stats.dispatcher.failed,
        "events_dropped": stats.frames.dropped if stats.frames is not None else 0,
    }
