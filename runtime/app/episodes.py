"""Driving one episode for a ready activation (the recipe of ``runtime.episodes``' docstring).

By the activation's kind:

* ``message`` — someone's message crossed the threshold or addressed the bot: a new episode on it;
* ``episode_resume`` — a waiting episode's time came: the waiting room hands it back with the news;
* ``reminder`` — a ``schedule_message`` reminder: its stored text is sent as it is, with no model call.
  The model already wrote that text when it was asked; calling it again could only change or drop
  what the user was promised, and would cost a call for nothing;
* anything else (``proactive`` from the LifeDirector ...) — a proactive episode with the proposal's cue.

Before any model work: the chat's send gate (a platform ban or a quiet period: nothing is sent, so
nothing is deliberated), a configured model, the chat's daily token cap (forced replies pass), and for
proactive wakes the director's "still live, not quiet hours". Only then is the context packet built —
here and nowhere else — and the model asked through :class:`~runtime.app.reasoner.ModelReasoner`.
The packet's own writes (its topic thread, session and the user's turn) go on beside the model
request; the episode waits for them before it acts on the answer (:mod:`runtime.context.deferred`).

Outcomes: ``replied`` -> Outbound send (gates, splitting, rate limit, one retry) -> speech recorded
(budget and store) -> the session records the reply -> the memory injector counts a round;
``waiting`` -> parked in the waiting room; a model failure on a forced activation, or a forced run
whose deadline passed -> the graceful message, a forced run a guard ended (``failed``, ``step_limit``)
-> ``guard_message``, either at most once per chat per ``graceful_cooldown_ms``; anything else ->
skipped with its reason.
Every activation goes through the kernel's deliberation (:mod:`runtime.kernel.deliberation`): begun,
the budget asked again under the chat's lock, the speech recorded when a send spoke, and finished
exactly once whatever happened; the episode is always stored. The message a ``message`` activation
answers comes with it from the kernel (from the store only for an event restored after a restart).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import structlog
from structlog.contextvars import bound_contextvars

from runtime import stages
from runtime.app.alarm import Alarm
from runtime.app.persona import Persona
from runtime.app.reasoner import ModelReasoner
from runtime.app.slots import gave_way, leave_slot
from runtime.app.why import WhyLog
from runtime.config import GreyWindConfig
from runtime.config.app import AppConfig
from runtime.context.builder import BuildReason, BuiltContext, ChatInfo, RecentBuffer
from runtime.context.setup import ContextRuntime
from runtime.episodes import (
    OWN_MESSAGE,
    RESUME_KIND,
    Episode,
    EpisodeSettings,
    Heard,
    OutcomeKind,
    WaitingRoom,
    episode_id_of,
    run_episode,
)
from runtime.episodes.actions import ToolCall
from runtime.episodes.persist import to_store_record, tool_call_records
from runtime.extensions import LifeDirector
from runtime.extensions.director import LIFE_MARK
from runtime.kernel.clock import Clock
from runtime.kernel.deliberation import Deliberation, Recheck
from runtime.kernel.errors import KernelError
from runtime.kernel.events import BotEvent, EventState
from runtime.kernel.ids import IdFactory
from runtime.kernel.kernel import Kernel
from runtime.kernel.message import ChatKey, ChatMessage
from runtime.kernel.outcomes import Activation, ActivationOutcome, IngestAction, IngestResult
from runtime.llm.router import ModelRouter
from runtime.memory.layers import MemoryLayer
from runtime.ports import Outbound
from runtime.store.kernel_state import chat_message
from runtime.store.records import SpeechRecord, StoredMessage
from runtime.store.roles import ReplyRows
from runtime.store.writer import StoreWriter
from runtime.tools import ToolRegistry

__all__ = ["MESSAGE_KIND", "REMINDER_KIND", "DriverParts", "DriverStatistics", "EpisodeDriver"]

log = structlog.get_logger("greywind.episode")

MESSAGE_KIND = "message"
REMINDER_KIND = "reminder"
PERMISSIONS = ("chat",)
# A reminder that could not be sent (no connection yet, a failed send, the account's sends paused) is
# tried again this much later; one the platform did not answer, unless the bot heard it go out.
REMINDER_RETRY = 5.0
_RETRYABLE = frozenset({"no_connection", "failed", "restricted", "unanswered"})
GRACEFUL_CHATS_KEPT = 4_096
# Runs a guard ended (see ``runtime.episodes.loop``); a forced one answers with ``[runtime] guard_message``.
GUARD_OUTCOMES = frozenset({OutcomeKind.FAILED, OutcomeKind.STEP_LIMIT})
# The longest an episode waits for its packet's writes once the model answered (seconds). Each write
# gives up within ``[store] write_wait_ms``; this only keeps a store that hangs from holding the
# episode, and a stop, for ever.
WRITES_WAIT = 10.0


@dataclass(frozen=True, slots=True)
class DriverStatistics:
    episodes: int
    replied: int
    waiting: int
    skipped: int
    model_failures: int
    graceful_sent: int
    guard_sent: int
    reminders_sent: int
    gated: int
    no_model: int


@dataclass(frozen=True, slots=True)
class DriverParts:
    """What the driver uses, given by the composition root."""

    config: GreyWindConfig  # the episodes' model timeout
    app: AppConfig
    clock: Callable[[], float]
    clock_obj: Clock
    ids: IdFactory
    persona: Persona
    model_ready: bool
    kernel: Kernel
    room: WaitingRoom
    episode_settings: EpisodeSettings
    tools: ToolRegistry
    director: LifeDirector
    router: ModelRouter
    store: ReplyRows
    writer: StoreWriter
    context: ContextRuntime
    memory: MemoryLayer | None
    outbound: Outbound
    recent: RecentBuffer
    why: WhyLog
    recalled: OrderedDict[tuple[str, str], None]  # recently recalled messages, never answered
    alarm: Alarm
    loop_spawn: Callable[[Awaitable[object]], None]  # bookkeeping off the chat's path
    running: Callable[[], bool]  # False once the runtime is stopping
    # Permissions a chat holds beyond PERMISSIONS: the MCP servers it may use (runtime.mcp).
    tool_grants: Callable[[str], frozenset[str]] = lambda chat_id: frozenset()


class EpisodeDriver:
    def __init__(self, parts: DriverParts) -> None:
        self._rt = parts
        self._graceful_at: dict[str, float] = {}
        self._counts = dict.fromkeys(
            (
                "episodes",
                "replied",
                "waiting",
                "skipped",
                "model_failures",
                "graceful_sent",
                "guard_sent",
                "reminders_sent",
                "gated",
                "no_model",
            ),
            0,
        )

    # -- activations that are not run -------------------------------------------------------------

    def settle(self, activation: Activation) -> None:
        """An activation that will not run (expired, superseded, dropped by the budget)."""
        event = activation.event
        if event.kind == RESUME_KIND and activation.outcome is not ActivationOutcome.SUPERSEDED:
            episode_id = episode_id_of(event.payload)
            episode = (
                self._rt.room.expire(episode_id, self._rt.clock(), reason=activation.outcome.value)
                if episode_id
                else None
            )
            if episode is not None:
                self._rt.loop_spawn(self._store_episode(episode, None))
        log.info(
            "activation_dropped",
            chat_id=event.chat_id,
            event_id=event.id,
            kind=event.kind,
            outcome=activation.outcome.value,
            reason=activation.reason,
        )
        self._note_life(event, spoke=False, reason=activation.reason or activation.outcome.value)

    def note_arrival(self, result: IngestResult) -> None:
        """A message the kernel dropped on arrival (a forced one past the forced budget) is logged."""
        event = result.event
        forced = event.payload.get("forced") is True
        if forced and result.action is IngestAction.RECORDED and event.state is EventState.SKIPPED:
            log.info(
                "activation_dropped",
                chat_id=event.chat_id,
                event_id=event.id,
                kind=event.kind,
                message_id=result.message.message_id,
                forced=True,
                outcome="budget_blocked",
                reason=result.reason,
            )

    def settle_unrun(self, activation: Activation, reason: str) -> None:
        """A ready activation that will not run (the runtime is stopping): begun and skipped."""
        try:
            deliberation = self._rt.kernel.deliberate(activation, self._rt.clock())
        except KernelError as exc:
            log.info("activation_gone", kind=activation.event.kind, error=str(exc))
            return
        self._finish(deliberation, EventState.SKIPPED, reason)

    # -- one ready activation --------------------------------------------------------------------

    async def run(self, activation: Activation) -> None:
        event = activation.event
        # Every log line of this activation, in any module, carries its chat, thread and event.
        with bound_contextvars(chat_id=event.chat_id, thread_id=event.thread_id, event_id=event.id):
            await self._run(activation)

    async def _run(self, activation: Activation) -> None:
        """The kernel's deliberation sequence (:mod:`runtime.kernel.deliberation`) around the work."""
        rt = self._rt
        kind = activation.event.kind
        cut = False
        try:
            d = rt.kernel.deliberate(activation, rt.clock())
        except KernelError as exc:  # withdrawn (recalled, cancelled) between due() and now
            log.info("activation_gone", kind=kind, error=str(exc))
            return
        stages.stamp_current("driver.deliberate")
        try:
            if not self._budget_allows(d):
                return
            if kind == REMINDER_KIND:
                await self._remind(d)
            else:
                await self._deliberate(d)
        except Exception as exc:
            if rt.running():
                log.exception("episode_failed", kind=kind)
            else:  # the store closed under it at shutdown; it is re-run after the restart
                log.info("episode_cut_by_shutdown", kind=kind, error=repr(exc)[:200])
            if not d.finished:
                self._finish(d, EventState.SKIPPED, "error")
        except anyio.get_cancelled_exc_class():
            if gave_way() and not d.finished:
                # A forced episode of the chat came before this one asked the model: it answers.
                self._finish(d, EventState.SKIPPED, "gave way to an addressed message")
            if rt.running():
                raise
            # A stop that could not wait: the event stays deliberating, the next start runs it again.
            log.info("episode_cut_by_shutdown", kind=kind, error="cancelled at stop")
            cut = True
            raise
        finally:
            if not d.finished and not cut:
                self._finish(d, EventState.SKIPPED, "not finished")

    def _finish(
        self, d: Deliberation, state: EventState, reason: str | None = None, until: float | None = None
    ) -> None:
        try:
            d.finish(self._rt.clock(), state, reason=reason, until=until)
        except KernelError as exc:
            log.warning("finish_refused", event_id=d.event.id, state=state.value, error=str(exc))
        if state is EventState.SKIPPED:
            self._counts["skipped"] += 1
        if state is not EventState.SNOOZED:
            self._note_life(d.event, spoke=state is EventState.REPLIED, reason=reason or state.value)

    def _note_life(self, event: BotEvent, *, spoke: bool, reason: str) -> None:
        """Tell the director what became of an activation it emitted (it says so in ``/why``)."""
        if LIFE_MARK in event.payload:
            payload = dict(event.payload)
            director = self._rt.director
            director.note_outcome(event.chat_id, event.id, spoke=spoke, reason=reason, payload=payload)

    def _budget_allows(self, d: Deliberation) -> bool:
        """The chat's budget, asked again now that this episode holds the chat (under its lock).

        See :mod:`runtime.kernel.deliberation` for why; a snoozed activation moves the loop's alarm,
        a dropped one is logged (and a resumed episode it carried expires).
        """
        rt = self._rt
        now = rt.clock()
        check = d.recheck(now)
        if check.proceed:
            return True
        if check.verdict is Recheck.SNOOZE:
            rt.alarm.poke()
            return False
        event = d.event
        if event.kind == RESUME_KIND:
            episode_id = episode_id_of(event.payload)
            expired = rt.room.expire(episode_id, now, "budget") if episode_id else None
            if expired is not None:
                rt.loop_spawn(self._store_episode(expired, None))
        self._counts["skipped"] += 1
        log.info(
            "activation_dropped",
            chat_id=event.chat_id,
            event_id=event.id,
            kind=event.kind,
            forced=d.forced,
            outcome="budget_blocked",
            reason=check.reason,
        )
        self._note_life(event, spoke=False, reason=check.reason)
        return False

    def _gate_closed(self, d: Deliberation) -> bool:
        event = d.event
        verdict = self._rt.outbound.gate(event.chat_id)
        if verdict.open:
            return False
        self._counts["gated"] += 1
        if (
            event.kind == REMINDER_KIND
            and verdict.until is not None
            and (event.deadline is None or verdict.until <= event.deadline)
        ):
            # A promised reminder is not lost to a quiet period: it comes when the period ends.
            self._finish(d, EventState.SNOOZED, until=verdict.until)
            self._rt.alarm.poke()
        else:
            self._finish(d, EventState.SKIPPED, f"gate {verdict.reason}")
        return True

    async def _remind(self, d: Deliberation) -> None:
        rt = self._rt
        if self._gate_closed(d):
            return
        event = d.event
        text = str(event.payload.get("text", "")).strip()
        if not text:
            self._finish(d, EventState.SKIPPED, "empty reminder")
            return
        leave_slot()
        result = await rt.outbound.send(event.chat_id, f"提醒：{text}")
        now = rt.clock()
        if self._spoke(d, result.sent or result.reason == "shadow", forced=True):
            self._counts["reminders_sent"] += 1
            self._finish(d, EventState.REPLIED)
            log.info("reminder_sent", chat_id=event.chat_id, event_id=event.id, shadow=not result.sent)
        elif result.reason in _RETRYABLE and (
            event.deadline is None or now + REMINDER_RETRY <= event.deadline
        ):
            # A promised reminder waits for the connection (a restart before the account reconnects).
            self._finish(d, EventState.SNOOZED, until=now + REMINDER_RETRY)
            rt.alarm.poke()
            log.info("reminder_postponed", reason=result.reason, retry_in=REMINDER_RETRY)
        else:
            self._finish(d, EventState.SKIPPED, f"send {result.reason}")

    def _spoke(self, d: Deliberation, spoke: bool, *, forced: bool) -> bool:
        """Whether the send spoke; if so the deliberation's speech is recorded (kernel and store).

        What was sent has joined its threads already: the outbound's hook notes every message the
        bot sends (:meth:`Kernel.note_outgoing`), answers to commands included.
        """
        if spoke:
            now = self._rt.clock()
            d.spoke(now, forced=forced)
            self._rt.loop_spawn(self._rt.writer.put(SpeechRecord(d.chat_id, now, forced)))
        return spoke

    async def _deliberate(self, d: Deliberation) -> None:
        rt = self._rt
        now = rt.clock()
        event = d.event
        chat_id = event.chat_id
        forced = d.forced
        if event.kind == RESUME_KIND and (not rt.model_ready or not rt.outbound.gate(chat_id).open):
            episode_id = episode_id_of(event.payload)
            expired = rt.room.expire(episode_id, now, "gate closed or no model") if episode_id else None
            if expired is not None:
                await self._store_episode(expired, None)
        if self._gate_closed(d):
            return
        if not rt.model_ready:
            self._counts["no_model"] += 1
            log.info(
                "would_deliberate",
                chat_id=chat_id,
                event_id=event.id,
                kind=event.kind,
                forced=forced,
                detail="no model configured: nothing is asked, nothing is sent",
            )
            self._finish(d, EventState.SKIPPED, "no model")
            return
        ledger = rt.router.ledger
        if not forced and ledger.over_cap(chat_id, ledger.day_of(now)):
            self._finish(d, EventState.SKIPPED, "daily token cap reached")
            return

        trigger: ChatMessage | None = None
        cue: str | None = None
        if event.kind == RESUME_KIND:
            episode_id = episode_id_of(event.payload)
            episode = rt.room.take(episode_id, now) if episode_id else None
            if episode is None:
                self._finish(d, EventState.SKIPPED, "waiting episode gone")
                return
            reason = BuildReason.PROACTIVE
            cue = f"（你之前选择先等一等：{episode.reason or 'wait'}。现在回来看看要不要说话。）"
        else:
            if event.kind == MESSAGE_KIND:
                trigger = await self._trigger(d)
                if trigger is None:
                    self._finish(d, EventState.SKIPPED, "message unavailable")
                    return
                decision = str(event.payload.get("decision", "medium"))
                reason = (
                    BuildReason.FORCED
                    if forced
                    else BuildReason(decision if decision in ("high", "medium") else "medium")
                )
            else:
                grounds = event.payload.get(LIFE_MARK)
                verdict = rt.director.allowed(
                    chat_id, now, grounds=grounds if isinstance(grounds, str) else None
                )
                if not verdict.allowed:
                    self._finish(d, EventState.SKIPPED, f"life: {verdict.reason}")
                    return
                reason = BuildReason.PROACTIVE
                cue = str(event.payload.get("cue") or event.payload.get("reason") or "（主动开口的时机）")
            episode = Episode.start(
                id=rt.ids("ep"),
                chat_id=chat_id,
                now=now,
                max_steps=rt.episode_settings.max_steps,
                time_limit=rt.episode_settings.time_limit,
                event_id=event.id,
                thread_id=event.thread_id,
                user_id=trigger.sender_id if trigger is not None else None,
                heard=(Heard(trigger.message_id, trigger.sender_id),) if trigger is not None else (),
            )
        await self._run_model(d, episode, trigger, cue, reason, forced)

    async def _trigger(self, d: Deliberation) -> ChatMessage | None:
        """The message a ``message`` activation answers: as the kernel ingested it, or for an event
        restored after a restart (the kernel keeps no text across one) from the store."""
        event = d.event
        if not event.evidence_message_ids:
            return None
        message_id = event.evidence_message_ids[0]
        if (event.chat_id, message_id) in self._rt.recalled:
            return None
        if d.trigger is not None:
            return d.trigger
        stored = await self._rt.store.get_message(event.chat_id, message_id)
        if stored is None:
            stored = next(
                (m for m in self._rt.recent.recent(event.chat_id) if m.message_id == message_id), None
            )
        if stored is None or stored.recalled:
            return None
        return chat_message(stored)

    async def _run_model(
        self,
        d: Deliberation,
        episode: Episode,
        trigger: ChatMessage | None,
        cue: str | None,
        reason: BuildReason,
        forced: bool,
    ) -> None:
        with bound_contextvars(episode_id=episode.id, thread_id=episode.thread_id or d.event.thread_id):
            await self._episode(d, episode, trigger, cue, reason, forced)

    async def _episode(
        self,
        d: Deliberation,
        episode: Episode,
        trigger: ChatMessage | None,
        cue: str | None,
        reason: BuildReason,
        forced: bool,
    ) -> None:
        rt = self._rt
        event = d.event
        chat_id = event.chat_id
        bound = log
        self._counts["episodes"] += 1
        now = rt.clock()
        chat = ChatInfo.for_chat(chat_id)
        stages.stamp_current("driver.context")
        built, prompt = await rt.context.prepare(
            trigger,
            chat=chat,
            now=now,
            reason=reason,
            conversation_thread_id=episode.thread_id or event.thread_id,
            cue=cue,
            defer_writes=True,
        )
        if trigger is not None and rt.memory is not None:
            # Learning the speaker's profile is no reason to keep the model waiting.
            rt.loop_spawn(rt.memory.profiles.observe(trigger, now=now))
        if built.session_created and built.packet.handoff is not None and rt.memory is not None:
            # design/001's force_on_session_start: a session that takes over from an ended one (a
            # restart, an idle close) folds what was left uncompressed into the summary. A session
            # opened because the talk moved to a new topic is no such start: no handoff, no call.
            # Queued, off the reply path; nothing runs when nothing is uncompressed or it is off.
            rt.loop_spawn(rt.memory.injector.note_session_start(chat_id, now=now))
        stages.stamp_current("context.prepared")
        app = rt.app
        reasoner = ModelReasoner(
            rt.router,
            prompt.as_messages(),
            chat_id=chat_id,
            names=rt.persona.names,
            temperature=app.temperature,
            max_tokens=app.max_reply_tokens,
            timeout=rt.config.episodes.model_timeout_ms / 1000,
            before_acting=built.written,
        )
        bound.info(
            "episode_start", reason=reason.value, forced=forced, prompt_tokens=prompt.tokens, run=episode.run
        )
        try:
            outcome = await run_episode(
                episode,
                reasoner,
                rt.tools,
                clock=rt.clock_obj,
                settings=rt.episode_settings,
                permissions=(*PERMISSIONS, *rt.tool_grants(chat_id)),
                quotes=self._quotable,
            )
        finally:
            # The packet's writes (topic thread, session, the user's turn) went on beside the model
            # request; whatever comes of the episode, a reply above all, comes after them.
            with anyio.CancelScope(shield=True, deadline=anyio.current_time() + WRITES_WAIT) as waited:
                built = await rt.context.builder.settle(built)
            if waited.cancelled_caught:
                log.warning("context_writes_late", waited=WRITES_WAIT)
        final = outcome.episode
        if outcome.kind is OutcomeKind.REPLIED and outcome.reply:
            await self._reply(d, trigger, built, outcome.reply, forced, final, outcome.quote)
        elif outcome.kind is OutcomeKind.WAITING:
            rt.room.park(final, rt.clock(), forced=forced)
            self._counts["waiting"] += 1
            self._finish(d, EventState.SKIPPED, "waiting")
            rt.alarm.poke()
        elif reasoner.model_error is not None:
            self._counts["model_failures"] += 1
            bound.warning("model_failed", error=str(reasoner.model_error)[:300], forced=forced)
            await self._graceful(d, _asked(final, trigger), forced)
        elif outcome.kind is OutcomeKind.DEADLINE and forced:
            # The run's time was up (the model, or its tools, too slow): as good as a model failure.
            bound.info("deadline_passed", reason=outcome.reason[:300])
            await self._graceful(d, _asked(final, trigger), forced, why=outcome.reason)
        elif outcome.kind in GUARD_OUTCOMES and forced:
            # A guard stopped the run (a repeated call, unknown tools or unreadable answers in a row,
            # waits refused, no decision in the step limit): whoever addressed the bot hears so.
            bound.info("guard_tripped", outcome=outcome.kind.value, reason=outcome.reason[:300])
            await self._graceful(
                d,
                _asked(final, trigger),
                forced,
                text=rt.app.guard_message,
                why=outcome.reason,
                counter="guard_sent",
            )
        else:
            self._finish(d, EventState.SKIPPED, outcome.reason or outcome.kind.value)
        rt.loop_spawn(self._store_episode(final, built))

    async def _reply(
        self,
        d: Deliberation,
        trigger: ChatMessage | None,
        built: BuiltContext,
        text: str,
        forced: bool,
        episode: Episode,
        named: str | None = None,
    ) -> None:
        rt = self._rt
        chat_id = d.chat_id
        private = ChatKey.parse(chat_id).is_private
        # The message the model named (the loop let only someone else's through), else the trigger.
        quote = named or (trigger.message_id if trigger is not None else None)
        quote = None if private else quote
        leave_slot()  # a send may wait for the account's rate: the model's slot goes on at once
        result = await rt.outbound.send(chat_id, text, reply_to=quote)
        now = rt.clock()
        if not self._spoke(d, result.sent or result.reason == "shadow", forced=forced):
            self._finish(d, EventState.SKIPPED, f"send {result.reason}")
            return
        self._counts["replied"] += 1
        self._finish(d, EventState.REPLIED)
        # The session's record and the memory layer's round count are bookkeeping: the chat is free
        # for its next episode as soon as the words are out.
        rt.loop_spawn(self._after_reply(chat_id, trigger, built, text, episode, now))

    async def _after_reply(
        self,
        chat_id: str,
        trigger: ChatMessage | None,
        built: BuiltContext,
        text: str,
        episode: Episode,
        now: float,
    ) -> None:
        rt = self._rt
        actions = tuple(step.action.name for step in episode.steps if isinstance(step.action, ToolCall))
        await rt.context.builder.record_reply(built, text, now=now, actions=actions)
        if rt.memory is not None:
            said = [StoredMessage.from_chat_message(trigger)] if trigger is not None else []
            said.append(
                StoredMessage(
                    chat_id=chat_id,
                    message_id=f"{episode.id}:reply",
                    sender_id="self",
                    sender_name=rt.persona.name,
                    time=now,
                    text=text,
                    from_self=True,
                )
            )
            await rt.memory.injector.note_round(chat_id, said, now=now)

    def _quotable(self, chat_id: str, message_id: str) -> str | None:
        """Whether an episode of ``chat_id`` may quote ``message_id`` (None) or why not: never the bot's
        own messages (:data:`~runtime.episodes.OWN_MESSAGE`), nor a recalled or unknown one."""
        if (chat_id, message_id) in self._rt.recalled:
            return "it was recalled"
        for message in reversed(self._rt.recent.recent(chat_id)):
            if message.message_id == message_id:
                if message.from_self or message.sender_id in self._rt.kernel.settings.self_ids:
                    return OWN_MESSAGE
                return "it was recalled" if message.recalled else None
        return "there is no such message among this chat's recent ones"

    async def _graceful(
        self,
        d: Deliberation,
        quote: str | None,
        forced: bool,
        *,
        text: str | None = None,
        why: str = "model unavailable",
        counter: str = "graceful_sent",
    ) -> None:
        """A short honest answer instead of silence, for a forced episode; once per chat per cooldown.

        The model's failure and a tripped guard share the cooldown: a chat in trouble hears one such
        line, not one per mention.
        """
        rt = self._rt
        chat_id = d.chat_id
        now = rt.clock()
        last = self._graceful_at.get(chat_id)
        cooldown = rt.app.graceful_cooldown_ms / 1000
        if not forced or (last is not None and now - last < cooldown):
            self._finish(d, EventState.SKIPPED, why)
            return
        self._graceful_at[chat_id] = now
        if len(self._graceful_at) > GRACEFUL_CHATS_KEPT:
            horizon = now - cooldown
            self._graceful_at = {chat: at for chat, at in self._graceful_at.items() if at >= horizon}
        leave_slot()
        result = await rt.outbound.send(chat_id, text or rt.app.graceful_message, reply_to=quote)
        if self._spoke(d, result.sent or result.reason == "shadow", forced=True):
            self._counts[counter] += 1
            self._finish(d, EventState.REPLIED)
        else:
            self._finish(d, EventState.SKIPPED, f"{why}; send {result.reason}")

    async def _store_episode(self, episode: Episode, built: BuiltContext | None) -> None:
        rt = self._rt
        topic = built.resolution.thread.id if built is not None and built.resolution is not None else None
        session = built.session.id if built is not None and built.session is not None else None
        try:
            await rt.store.save_episode(to_store_record(episode, topic_thread_id=topic, session_id=session))
            for call in tool_call_records(episode):
                await rt.writer.put(call)
        except Exception:
            log.exception("episode_store_failed", episode_id=episode.id, chat_id=episode.chat_id)

    def statistics(self) -> DriverStatistics:
        return DriverStatistics(**self._counts)


def _asked(episode: Episode, trigger: ChatMessage | None) -> str | None:
    """The group message an answer to the episode quotes: the trigger, or for a resumed episode the
    message that began it (its first heard, said by the user it began for). ``None`` in private chats."""
    if ChatKey.parse(episode.chat_id).is_private:
        return None
    if trigger is not None:
        return trigger.message_id
    first = episode.heard[0] if episode.heard else None
    return first.message_id if first is not None and first.speaker_id == episode.user_id else None
