"""The kernel facade: every message in, a decision out; every tick, the activations that are due.

::

    kernel = Kernel(KernelSettings.from_config(cfg, self_ids=("10001",)))
    result = kernel.ingest(message)          # IngestResult: act_now (with .activation) | scheduled | recorded
    for activation in kernel.due(now):       # ready | budget_blocked | expired | superseded
        d = kernel.deliberate(activation, now)            # runtime.kernel.deliberation
        if d.recheck(now).proceed: ...; d.spoke(now, sent=...); d.finish(now, "replied")
    kernel.note_outgoing(sent_message)       # what the bot sent, seen as it leaves
    kernel.take_learning()                   # the learn queue's next batch, off the hot path

How :meth:`Kernel.ingest` fills the attention inputs (:mod:`runtime.kernel.attention`):
``forced`` is the edge's ``addressed`` (or a private chat); ``direct`` is the persona's name or an alias
in the text (matched under :data:`PERSONA_KEY`) or a reply into a thread the bot spoke in;
``keyword_score`` scores the hits of the global, group and thread keys; ``thread_continuity`` fades
from 1 to 0 over ``threads.gap`` after the bot last spoke in the message's thread;
``silence_seconds`` is the time since the chat's previous message; ``recently_replied`` means the
bot spoke in the chat within ``scheduling.recently_replied`` but not in this thread;
``budget_exhausted`` means the normal budget refuses now. Only the first ``read_max_chars`` are
read for keywords and the question check.

What :meth:`Kernel.ingest` does with a message, by attention decision:

- **forced** (the edge judged it addressed to the bot): if the forced budget allows, the event is
  ``eligible`` at once (``act_now``, the result carries the ready activation); if it refuses with
  a ``retry_at`` within ``scheduling.forced_deadline``, the event is scheduled then (payload
  ``forced``); else it is recorded as ``skipped`` with the budget's reason.
- **high / medium**: scheduled ``high_delay`` / ``medium_delay`` after the message, with a deadline
  ``high_deadline`` / ``medium_deadline`` after it. The event's priority is the attention score.
- **low**: recorded (the event is ``skipped``, reason ``attention low``).

A message from another bot (:mod:`runtime.kernel.bots`: ``[bots] ids``, ids the composition root adds
to :attr:`Kernel.bots`, and accounts that answer within a second every time) counts one *bot turn* in
its chat; a person's message sets the count back to zero. Past ``[bots] max_turns`` a bot's message
is only recorded (low, reason ``bot exchange``, whatever it says) until a person speaks. The bot's
own messages (``from_self``, or a sender in ``self_ids``) are never scored at all: they join their
thread and nothing else.

A newer scheduled or forced message supersedes the older pending *message* activation of the same
conversation thread (or chat, or nothing: ``scheduling.supersede``): that event is ``skipped`` with
reason ``superseded by <id>`` and reported once by the next :meth:`Kernel.due`. Activations made by
:meth:`Kernel.schedule_activation` (an episode's ``wait``, life sources, reminders) are never
superseded by messages.

What :meth:`Kernel.due` does with an activation whose time came: it asks the chat's budget (the
forced one when the payload says ``forced``, else the normal one). Refused, it is rescheduled at
``retry_at`` when that is not past its deadline (and not reported), else dropped as
``budget_blocked``. One voice per chat: a batch holds at most one ``ready`` activation per chat, and
no non-forced one for a chat whose episode is still deliberating; the others are treated as refused
with ``retry_at = now + min_interval`` of their budget (the speech the first one may make).

A ready activation carries the message it answers (``trigger``, as ingested: the kernel keeps it
while the event is pending). The caller acts on it through :meth:`Kernel.deliberate`, the one
sequence the bot and the replay share (:mod:`runtime.kernel.deliberation`): the budget asked again
once the chat is held, the speech recorded (it spends the budget), the event finished exactly once.
:meth:`Kernel.note_outgoing` takes each message the bot sent into its conversation thread, which
feeds ``thread_continuity`` and ``direct`` of later messages.

Every message's text (its first ``lexicon.learn_max_chars``) waits for lexicon learning in a queue of
at most ``scheduling.learn_queue_max`` texts; :meth:`Kernel.take_learning` hands out the next batch
(the bot segments it in a worker thread), :meth:`Kernel.learn_pending` learns it at once (the replay).

Persistence puts state back on start with :meth:`Kernel.restore_events` (non-terminal events; the
waiting ones are scheduled again), :meth:`Kernel.restore_speeches` (the budgets) and
:meth:`Kernel.restore_threads` (conversation threads, from recent messages). A deliberation
that never finishes (its episode died) stops holding its chat back after
``scheduling.deliberation_timeout``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import replace
from operator import itemgetter

from runtime.kernel._build import builder
from runtime.kernel._signals import looks_like_question
from runtime.kernel._supersede import MESSAGE_KIND, Supersession
from runtime.kernel.attention import Attention, AttentionInput, AttentionWeights, Decision, score_attention
from runtime.kernel.bots import BOT_EXCHANGE, BotRoster
from runtime.kernel.budget import Budgets, BudgetVerdict
from runtime.kernel.deliberation import Deliberation
from runtime.kernel.errors import IllegalTransition, InvalidSetting
from runtime.kernel.events import BotEvent, EventState, EventStore
from runtime.kernel.ids import IdFactory, counter_ids
from runtime.kernel.lexicon.learning import Segmenter
from runtime.kernel.lexicon.lexicon import DynamicLexicon
from runtime.kernel.lexicon.normalize import normalize_term
from runtime.kernel.lexicon.scoring import score_hits
from runtime.kernel.lexicon.terms import (
    GLOBAL_KEY,
    KeywordHit,
    LexiconKey,
    LexiconScope,
    TermStatus,
)
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.outcomes import (
    Activation,
    ActivationOutcome,
    IngestAction,
    IngestResult,
    KernelStatistics,
)
from runtime.kernel.scheduler import ActivationScheduler
from runtime.kernel.settings import KernelSettings
from runtime.kernel.threads import RestoredMessage, ThreadAssignment, ThreadTracker

__all__ = [
    "PERSONA_KEY",
    "Activation",
    "ActivationOutcome",
    "IngestAction",
    "IngestResult",
    "Kernel",
    "KernelStatistics",
]

PERSONA_KEY = LexiconKey(LexiconScope.PERSONA, "self")
OUTGOING_KIND = "outgoing"

_WAITING = frozenset({EventState.SCHEDULED, EventState.SNOOZED})
# Enum members bound once: a class attribute lookup on an Enum costs ~10x a global on the hot path.
_PERSONA_SCOPE = LexiconScope.PERSONA
_LOW, _FORCED, _HIGH = Decision.LOW, Decision.FORCED, Decision.HIGH
_SKIPPED, _WAITS = EventState.SKIPPED, EventState.SCHEDULED
_RECORDED, _SCHEDULED, _ACT_NOW = IngestAction.RECORDED, IngestAction.SCHEDULED, IngestAction.ACT_NOW
_READY = ActivationOutcome.READY
_PRIVATE = ChatKind.PRIVATE
# A member's ``.value`` is a property call; what a scheduled message's event and result say, by decision.
_DECISION_VALUE = {d: d.value for d in Decision}
_SCHEDULED_REASON = {d: f"attention {d.value}" for d in Decision}
# Positional builders (every field, set through the slots): made for every message.
_attention_input = builder(AttentionInput)
_TERM = itemgetter(1)  # KeywordHit.term, read in C (a comprehension is a frame of its own)
_ingest_result = builder(IngestResult)
_activation = builder(Activation)


class Kernel:
    """The kernel's single entry point; see the module docstring for what each call decides."""

    def __init__(
        self,
        settings: KernelSettings | None = None,
        *,
        ids: IdFactory | None = None,
        segmenter: Segmenter | None = None,
        lexicon: DynamicLexicon | None = None,
        now: float = 0.0,
    ) -> None:
        self.settings = s = settings or KernelSettings()
        ids = ids if ids is not None else counter_ids()
        self.events = EventStore(
            ids=ids, keep_terminal_for=s.events.keep_terminal_for, max_terminal=s.events.max_terminal
        )
        self.threads = ThreadTracker(s.threads, ids=ids)
        self.scheduler = ActivationScheduler(self.events)
        self.budgets = Budgets(s.budget, s.forced_budget)
        self.lexicon = lexicon if lexicon is not None else DynamicLexicon(s.lexicon, segmenter=segmenter)
        self._self_ids = frozenset(s.self_ids)
        # Other bots (known and detected) and each chat's bot turns; the composition root adds ids.
        self.bots = BotRoster(s.bots)
        # The pending message activation per supersede key (thread id or chat id).
        self._supersession = Supersession(s.scheduling.supersede, self.events, self.scheduler)
        self._deliberating: dict[str, tuple[str, float]] = {}  # event id -> (chat id, began at)
        self._bot_in_thread: dict[str, float] = {}  # thread id -> when the bot last spoke in it
        self._last_message_at: dict[str, float] = {}  # chat id -> time of its latest message
        self._match_keys: dict[str, tuple[LexiconKey, ...]] = {}  # thread id -> lexicon keys
        self._learn_queue: deque[tuple[str, str]] = deque(maxlen=s.scheduling.learn_queue_max or None)
        self._triggers: dict[str, ChatMessage] = {}  # pending message event id -> its message
        self._counts: dict[str, int] = {}
        # Per-chat thresholds over ``[attention]`` (an operator's override): chat id -> weights.
        self._chat_attention: dict[str, AttentionWeights] = {}
        self._ingested = 0
        self._learn_dropped = 0
        self._learned_texts = 0
        self._rescheduled = 0
        self._pin_names(now)

    def _pin_names(self, now: float) -> None:
        """The persona's names under the persona key, ``[lexicon].terms`` under the global key.

        A name too short to be a term after normalisation (one character) cannot be matched and is
        left out; the edge still recognises it when it opens a message.
        """
        s = self.settings
        names = [n for n in (s.persona_name, *s.persona_aliases) if len(normalize_term(n)) >= 2]
        if names:
            self.lexicon.add(
                PERSONA_KEY, names[0], now=now, aliases=names[1:], source="persona", status=TermStatus.PINNED
            )
        for term in s.lexicon_terms:
            if len(normalize_term(term)) >= 2:
                self.lexicon.add(GLOBAL_KEY, term, now=now, source="config", status=TermStatus.PINNED)

    # -- the hot path ----------------------------------------------------------------------------

    def ingest(self, message: ChatMessage) -> IngestResult:
        """Thread, lexicon, attention and a decision for one incoming message."""
        if message.from_self or message.sender_id in self._self_ids:
            return self._ingest_own(message)
        s = self.settings
        now = message.time
        chat_id = message.chat_id
        bots = self.bots
        bot_turns = bots.observe(chat_id, message.sender_id, now)
        assignment = self.threads.assign(message)
        thread_id = assignment.thread.id

        text = message.text
        head = text if len(text) <= s.read_max_chars else text[: s.read_max_chars]
        hits = self.lexicon.match(head, self._keys_for(chat_id, thread_id)) if head else []
        persona_named = False
        topical: list[KeywordHit] = []
        for hit in hits:
            if hit.key.scope is _PERSONA_SCOPE:
                persona_named = True
            else:
                topical.append(hit)

        bot_last = self._bot_in_thread.get(thread_id)
        continuity = 0.0
        if bot_last is not None:
            continuity = 1.0 - (now - bot_last) / s.threads.gap
            if not continuity > 0.0:  # max(0.0, ...) without the builtin's call
                continuity = 0.0
        actor = self.budgets.get(chat_id)
        last_speech = actor.last_speech_at if actor is not None else None
        previous = self._last_message_at.get(chat_id)
        silence = 0.0
        if previous is None:
            self._last_message_at[chat_id] = now
        else:
            silence = now - previous
            if silence > 0.0:  # a message later than the chat's latest (else it stays the latest)
                self._last_message_at[chat_id] = now
            else:
                silence = 0.0
        inp = _attention_input(
            message.addressed or message.chat_kind is _PRIVATE,  # forced
            persona_named or (assignment.reason == "reply" and bot_last is not None),  # direct
            score_hits(topical) if topical else 0.0,  # keyword_score
            continuity,  # thread_continuity
            looks_like_question(head),  # question
            silence,  # silence_seconds
            (  # recently_replied
                last_speech is not None
                and bot_last is None
                and now - last_speech < s.scheduling.recently_replied
            ),
            actor is not None and not actor.peek(now).allowed,  # budget_exhausted
            tuple(dict.fromkeys(map(_TERM, topical))) if topical else (),  # keywords
        )
        attention = score_attention(inp, self._chat_attention.get(chat_id, s.attention))
        held_back = bot_turns > 0 and bots.holds_back(chat_id, message.sender_id, bot_turns)
        if held_back:  # a bot exchange ran past [bots] max_turns: recorded until a person speaks
            reasons = (*attention.reasons, f"{BOT_EXCHANGE} ({bot_turns})")
            attention = Attention(attention.score, _LOW, reasons)

        if s.scheduling.learn_queue_max and text:
            if len(self._learn_queue) == self._learn_queue.maxlen:
                self._learn_dropped += 1
            self._learn_queue.append((chat_id, text[: s.lexicon.learn_max_chars]))

        # Each branch creates the event with its final fields and makes the fewest legal moves:
        # the thread is known at creation (no separate ``linked`` step), attention is already scored.
        decision = attention.decision
        superseded: tuple[str, ...] = ()
        activate_at: float | None = None
        add = self.events.add
        actors = (message.sender_id,)
        evidence = (message.message_id,)
        if decision is _LOW:
            event = add(
                MESSAGE_KIND,
                chat_id,
                now,
                thread_id,
                actors,
                evidence,
                None,  # not_before: now
                None,  # deadline
                attention.score,
                {"skip_reason": BOT_EXCHANGE} if held_back else None,
                _SKIPPED,
            )
            action, reason = _RECORDED, BOT_EXCHANGE if held_back else "attention low"
        elif decision is _FORCED:
            action, event, reason, activate_at = self._forced(message, chat_id, thread_id, attention, now)
        else:
            sched = s.scheduling
            high = decision is _HIGH
            activate_at = now + (sched.high_delay if high else sched.medium_delay)
            event = add(
                MESSAGE_KIND,
                chat_id,
                now,
                thread_id,
                actors,
                evidence,
                activate_at,  # not_before
                now + (sched.high_deadline if high else sched.medium_deadline),  # deadline
                attention.score,  # priority
                {"decision": _DECISION_VALUE[decision], "reasons": attention.reasons},
                _WAITS,  # captured -> classified -> scheduled, counted as two moves
            )
            event = self.scheduler.schedule_event(event, now)
            action, reason = _SCHEDULED, _SCHEDULED_REASON[decision]
        act_now: Activation | None = None
        if action is not _RECORDED:
            superseded = self._supersession.supersede(event, now)
            self.budgets.actor(chat_id).note_event(event.id)
            self._triggers[event.id] = message
            if action is _ACT_NOW:
                act_now = _activation(event, _READY, reason, message)
        self._ingested += 1
        counts = self._counts
        # StrEnum members hash and compare as their values: statistics() reads them by value.
        counts[action] = counts.get(action, 0) + 1
        counts[decision] = counts.get(decision, 0) + 1
        return _ingest_result(
            message,
            event,
            assignment,
            attention,
            action,
            activate_at,
            superseded,
            tuple(hits),
            reason,
            act_now,
        )

    def _keys_for(self, chat_id: str, thread_id: str) -> tuple[LexiconKey, ...]:
        """The lexicon keys a message of this chat and thread is matched against (cached)."""
        keys = self._match_keys.get(thread_id)
        if keys is None:
            keys = self._match_keys[thread_id] = (
                GLOBAL_KEY,
                LexiconKey(LexiconScope.GROUP, chat_id),
                LexiconKey(LexiconScope.THREAD, thread_id),
                PERSONA_KEY,
            )
        return keys

    def _forced(
        self, message: ChatMessage, chat_id: str, thread_id: str, attention: Attention, now: float
    ) -> tuple[IngestAction, BotEvent, str, float | None]:
        verdict = self.budgets.actor(chat_id).can_speak(now, forced=True)
        deadline = now + self.settings.scheduling.forced_deadline
        retry = verdict.retry_by(deadline)
        delayed = retry is not None
        payload: dict[str, object] = {"forced": True, "reasons": attention.reasons}
        if verdict.allowed:
            state = EventState.ELIGIBLE
        elif delayed:
            state = EventState.SCHEDULED
        else:
            state = EventState.SKIPPED
            payload["skip_reason"] = verdict.reason
        event = self.events.create(
            kind=MESSAGE_KIND,
            chat_id=chat_id,
            now=now,
            thread_id=thread_id,
            actor_ids=(message.sender_id,),
            evidence_message_ids=(message.message_id,),
            not_before=retry if delayed else now,
            deadline=deadline,
            priority=1.0,
            payload=payload,
            state=state,  # captured -> classified -> eligible, -> scheduled, or -> skipped
        )
        if verdict.allowed:
            return IngestAction.ACT_NOW, event, "forced", now
        if delayed:
            event = self.scheduler.schedule_event(event, now)
            return IngestAction.SCHEDULED, event, f"forced, delayed: {verdict.reason}", retry
        return IngestAction.RECORDED, event, f"forced, dropped: {verdict.reason}", None

    def _ingest_own(self, message: ChatMessage) -> IngestResult:
        """The bot's own message came back through the edge: it joins its thread, nothing else."""
        assignment = self.note_outgoing(message)
        now = message.time
        event = self.events.create(
            kind=OUTGOING_KIND,
            chat_id=message.chat_id,
            now=now,
            thread_id=assignment.thread.id,
            actor_ids=(message.sender_id,),
            evidence_message_ids=(message.message_id,),
            state=EventState.SKIPPED,
        )
        attention = Attention(0.0, Decision.LOW, ("the bot's own message",))
        self._counts["own"] = self._counts.get("own", 0) + 1
        return IngestResult(
            message, event, assignment, attention, IngestAction.RECORDED, None, (), (), "own message"
        )

    def _skip(self, event_id: str, now: float, reason: str) -> BotEvent:
        event = self.events.require(event_id)
        payload = {**event.payload, "skip_reason": reason}
        return self.events.transition(event_id, EventState.SKIPPED, now, payload=payload)

    # -- per-chat thresholds ---------------------------------------------------------------------

    def set_thresholds(self, chat_id: str, *, high: float | None, medium: float | None) -> AttentionWeights:
        """Override the high and medium attention thresholds for one chat (None: the configured
        value); both None drops the override. Raises :class:`InvalidSetting` (nothing changed) when
        the pair breaks ``0 <= medium <= high <= 1``."""
        base = self.settings.attention
        weights = replace(
            base, high=base.high if high is None else high, medium=base.medium if medium is None else medium
        )
        if high is None and medium is None:
            self._chat_attention.pop(chat_id, None)
        else:
            self._chat_attention[chat_id] = weights
        return weights

    def thresholds(self, chat_id: str) -> AttentionWeights:
        """The attention weights ``chat_id``'s messages are scored with."""
        return self._chat_attention.get(chat_id, self.settings.attention)

    # -- activations -----------------------------------------------------------------------------

    def due(self, now: float, limit: int | None = None) -> list[Activation]:
        """Expired and superseded reports, budget drops, then the activations ready to deliberate.

        ``limit`` bounds how many activations are taken from the scheduler; reports are always
        included.
        """
        out: list[Activation] = []
        for event in self.scheduler.expire(now):
            self._supersession.release(event)
            out.append(Activation(event, ActivationOutcome.EXPIRED, "deadline passed"))
        out.extend(self._supersession.drain())
        # A deliberation older than the timeout (an episode that died without finish()) stops
        # holding its chat back: failures stay local.
        stale_before = now - self.settings.scheduling.deliberation_timeout
        deliberating = {chat for chat, began in self._deliberating.values() if began >= stale_before}
        voiced: set[str] = set()  # chats given a ready activation in this batch
        s = self.settings
        for event in self.scheduler.due(now, limit):
            self._supersession.release(event)
            forced = event.payload.get("forced") is True
            chat_id = event.chat_id
            if chat_id in voiced or (not forced and chat_id in deliberating):
                gap = s.forced_budget.min_interval if forced else s.budget.min_interval
                verdict = BudgetVerdict(False, "another activation of this chat goes first", now + gap)
            else:
                verdict = self.budgets.actor(chat_id).can_speak(now, forced=forced)
            if verdict.allowed:
                voiced.add(chat_id)
                out.append(Activation(event, _READY, verdict.reason, self._triggers.get(event.id)))
                self._count("ready")
                continue
            retry = verdict.retry_by(event.deadline)
            if retry is not None:
                # Back to scheduled with the new time in one move (eligible -> scheduled is legal).
                waiting = self.events.transition(event.id, EventState.SCHEDULED, now, not_before=retry)
                self._supersession.hold(self.scheduler.schedule_event(waiting, now))
                self._rescheduled += 1
                continue
            dropped = self._skip(event.id, now, verdict.reason)
            out.append(Activation(dropped, ActivationOutcome.BUDGET_BLOCKED, verdict.reason))
        triggers = self._triggers
        for activation in out:
            if activation.outcome is not _READY:
                triggers.pop(activation.event.id, None)  # it ends here: nobody answers its message
                self._count(activation.outcome.value)
        return out

    def _count(self, name: str) -> None:
        key = f"activation:{name}"
        self._counts[key] = self._counts.get(key, 0) + 1

    def schedule_activation(
        self,
        kind: str,
        chat_id: str,
        *,
        now: float,
        not_before: float,
        deadline: float | None = None,
        priority: float = 0.0,
        thread_id: str | None = None,
        payload: Mapping[str, object] | None = None,
    ) -> BotEvent:
        """Schedule a non-message activation (an episode's ``wait``, a life source, a reminder).

        It passes the normal budget when due, unless ``payload["forced"]`` is true. Cancel it with
        :meth:`cancel` (its disposer).
        """
        if deadline is not None and deadline < not_before:
            raise InvalidSetting("deadline", f"{deadline} is before not_before {not_before}")
        event = self.events.create(
            kind=kind,
            chat_id=chat_id,
            now=now,
            thread_id=thread_id,
            not_before=not_before,
            deadline=deadline,
            priority=priority,
            payload=payload,
        )
        self.events.transition(event.id, EventState.CLASSIFIED, now)
        return self.scheduler.schedule(event.id, now)

    def cancel(self, event_id: str, now: float | None = None, *, reason: str = "cancelled") -> bool:
        """Withdraw a pending activation (it becomes ``skipped``); whether it was pending."""
        event = self.events.get(event_id)
        when = now if now is not None else (event.updated_at if event is not None else 0.0)
        if not self.scheduler.cancel(event_id, when, reason=reason):
            return False
        self._triggers.pop(event_id, None)
        if event is not None:
            self._supersession.release(event)
        return True

    def deliberate(self, activation: Activation, now: float) -> Deliberation:
        """Begin deliberating on a ``ready`` activation: the one sequence every caller follows.

        See :mod:`runtime.kernel.deliberation` (recheck, spoke, finish exactly once). Raises
        :class:`~runtime.kernel.errors.IllegalTransition` for an activation that is not ready, or
        whose event is no longer ``eligible`` (withdrawn, cancelled, pruned between ``due`` and now),
        and :class:`~runtime.kernel.errors.UnknownEvent` for an event the kernel no longer holds.
        """
        if activation.outcome is not _READY:
            raise IllegalTransition("activation", activation.outcome.value, EventState.DELIBERATING.value)
        return Deliberation(self, activation, self.begin(activation.event.id, now))

    def begin(self, event_id: str, now: float) -> BotEvent:
        """An episode starts deliberating on an ``eligible`` event (the first step of :meth:`deliberate`)."""
        event = self.events.transition(event_id, EventState.DELIBERATING, now)
        self._deliberating[event_id] = (event.chat_id, now)
        return event

    def finish(
        self,
        event_id: str,
        now: float,
        outcome: str | EventState,
        *,
        until: float | None = None,
        reason: str | None = None,
    ) -> BotEvent:
        """End a deliberation: ``replied``, ``skipped`` (with ``reason``) or ``snoozed`` ``until``.

        The last step of :meth:`deliberate`'s sequence (callers finish through their
        :class:`~runtime.kernel.deliberation.Deliberation`, which allows it once). An episode that
        outlived ``scheduling.deliberation_timeout`` finds its event already closed by :meth:`prune`;
        finishing it then returns the event unchanged instead of failing.
        """
        state = EventState(outcome)
        if state not in (EventState.REPLIED, EventState.SKIPPED, EventState.EXPIRED, EventState.SNOOZED):
            raise InvalidSetting("outcome", f"{state.value} does not end a deliberation")
        self._deliberating.pop(event_id, None)
        current = self.events.require(event_id)
        if current.terminal:
            self._triggers.pop(event_id, None)
            return current
        if state is EventState.SNOOZED:
            if until is None:
                raise InvalidSetting("until", "a snoozed event needs the time to wake up")
            return self.scheduler.snooze(event_id, until, now)
        self._triggers.pop(event_id, None)
        if state is EventState.SKIPPED and reason is not None:
            return self._skip(event_id, now, reason)
        return self.events.transition(event_id, state, now)

    # -- speech ----------------------------------------------------------------------------------

    def record_speech(self, chat_id: str, now: float, *, forced: bool = False) -> None:
        """The bot has spoken in ``chat_id``: spend its budget."""
        self.budgets.record_speech(chat_id, now, forced=forced)

    def note_outgoing(self, message: ChatMessage) -> ThreadAssignment:
        """A message the bot sent joins its conversation thread (reply target first)."""
        assignment = self.threads.assign(message)
        now = message.time
        self._bot_in_thread[assignment.thread.id] = now
        self.bots.note_own(message.chat_id, now)
        previous = self._last_message_at.get(message.chat_id)
        self._last_message_at[message.chat_id] = now if previous is None else max(previous, now)
        return assignment

    # -- learning and housekeeping ---------------------------------------------------------------

    def learn_pending(self, now: float, max_texts: int | None = None) -> int:
        """Learn group lexicon terms from queued texts in one batch (jieba); how many were read.

        :meth:`take_learning` then the lexicon's ``learn_batch``, in the caller's thread (the replay).
        The bot calls the two halves itself, segmenting in a worker thread (``prepare_learning``)
        and applying on its loop (``apply_learning``). Call it off the per-message path (a
        background task every ``[lexicon].learn_interval_ms``).
        """
        batch = self.take_learning(max_texts)
        if batch:
            self.lexicon.learn_batch(batch, now)
        return sum(len(texts) for texts in batch.values())

    def take_learning(self, max_texts: int | None = None) -> dict[LexiconKey, list[str]]:
        """The next batch of queued texts (at most ``[lexicon].learn_max_texts``), by group key.

        Every message's text (its first ``learn_max_chars``) waits in a queue of at most
        ``scheduling.learn_queue_max`` (the oldest dropped beyond, and counted; ``0`` learns
        nothing). What is taken counts as learned.
        """
        queue = self._learn_queue
        take = min(len(queue), self.settings.lexicon.learn_max_texts)
        if max_texts is not None:
            take = min(take, max(0, max_texts))
        by_key: dict[LexiconKey, list[str]] = {}
        for _ in range(take):
            chat_id, text = queue.popleft()
            by_key.setdefault(LexiconKey(LexiconScope.GROUP, chat_id), []).append(text)
        self._learned_texts += take
        return by_key

    def prune(self, now: float) -> int:
        """Housekeeping, called every minute or so: returns how many events and threads went.

        Events nobody took up are closed so the store stays bounded: an ``eligible`` event not begun
        within ``scheduling.deliberation_timeout`` is ``skipped`` ("never taken up"), a deliberation
        older than that (its episode died) ``expired``. Then old finished events and idle threads
        are dropped.
        """
        stale_before = now - self.settings.scheduling.deliberation_timeout
        for event_id in [e for e, (_, began) in self._deliberating.items() if began < stale_before]:
            del self._deliberating[event_id]
            if self.events.can_transition(event_id, EventState.EXPIRED):
                self.events.transition(event_id, EventState.EXPIRED, now)
        for event in self.events.list(states=(EventState.ELIGIBLE,)):
            if event.updated_at < stale_before:
                self._skip(event.id, now, "never taken up")
        dropped = self.events.prune(now) + self.threads.prune(now)
        horizon = now - self.settings.threads.horizon
        for thread_id in [t for t, at in self._bot_in_thread.items() if at < horizon]:
            del self._bot_in_thread[thread_id]
        for chat_id in [c for c, at in self._last_message_at.items() if at < horizon]:
            del self._last_message_at[chat_id]
        self.bots.prune(horizon)
        threads = self.threads
        for thread_id in [t for t in self._match_keys if t not in threads]:
            del self._match_keys[thread_id]
        events = self.events
        for event_id in [e for e in self._triggers if (ev := events.get(e)) is None or ev.terminal]:
            del self._triggers[event_id]
        return dropped

    def restore_events(self, events: Iterable[BotEvent], now: float) -> int:
        """Put persisted events back on start; waiting ones are held by the scheduler again.

        An event a restart interrupted (``eligible`` or ``deliberating``) is scheduled again at
        ``now`` (within its deadline; past it, it expires at the next :meth:`due`).
        """
        restored = 0
        for event in events:
            self.events.restore(event)
            if event.state in _WAITING:
                self.scheduler.restore([event])
            elif event.state is EventState.ELIGIBLE:
                self.events.update(event.id, now, not_before=now)
                self.scheduler.schedule(event.id, now)
            elif event.state is EventState.DELIBERATING:
                self.scheduler.snooze(event.id, now, now)
            else:
                continue
            restored += 1
            self._supersession.hold(event)
        return restored

    def restore_speeches(self, speeches: Mapping[str, Iterable[tuple[float, bool]]]) -> None:
        """Put the bot's recent speeches ``{chat_id: [(time, forced), ...]}`` back into the budgets."""
        for chat_id, items in speeches.items():
            self.budgets.restore(chat_id, items)

    def restore_threads(self, messages: Iterable[RestoredMessage], now: float) -> int:
        """Put conversation threads back on start from recent messages and their stored thread ids.

        See :meth:`ThreadTracker.restore`. The bot's own messages among them mark the live threads it
        spoke in again (``thread_continuity``, ``direct``), and each chat's latest message within the
        horizon comes back for ``silence_seconds``. Returns how many messages were taken in.
        """
        items = list(messages)
        taken = self.threads.restore(items, now)
        horizon = now - self.settings.threads.horizon
        bot_in_thread, last_at = self._bot_in_thread, self._last_message_at
        for item in items:
            message = item.message
            if message.time < horizon or self.threads.thread_of(message.chat_id, message.message_id) is None:
                continue
            chat_id = message.chat_id
            last_at[chat_id] = max(last_at.get(chat_id, message.time), message.time)
            thread = self.threads.get(item.thread_id)
            own = message.from_self or message.sender_id in self._self_ids
            if own and thread is not None and thread.chat_id == chat_id:
                bot_in_thread[thread.id] = max(bot_in_thread.get(thread.id, message.time), message.time)
        return taken

    def pending_learning(self) -> int:
        return len(self._learn_queue)

    def statistics(self) -> KernelStatistics:
        counts = self._counts
        actions = tuple((a.value, counts.get(a.value, 0)) for a in IngestAction)
        decisions = tuple((d.value, counts.get(d.value, 0)) for d in Decision)
        activations = tuple((o.value, counts.get(f"activation:{o.value}", 0)) for o in ActivationOutcome)
        return KernelStatistics(
            ingested=self._ingested,
            by_action=actions,
            by_decision=decisions,
            activations=activations,
            rescheduled_by_budget=self._rescheduled,
            superseded=self._supersession.total,
            learn_queue=len(self._learn_queue),
            learn_dropped=self._learn_dropped,
            learned_texts=self._learned_texts,
            events=self.events.statistics(),
            threads=self.threads.statistics(),
            scheduler=self.scheduler.statistics(),
            budgets=self.budgets.statistics(),
            lexicon=self.lexicon.statistics(),
        )
