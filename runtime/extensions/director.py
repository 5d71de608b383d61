"""The LifeDirector: the tick that advances activities and polls life sources.

Every ``[life] tick_ms`` the lifespan calls :meth:`LifeDirector.tick` (or runs :meth:`run` in its task
group). Each activity / life source is called when its own ``interval`` has passed — one timer per
registration, held here and dropped when the registration goes. What they return are
:class:`Proposal` values; a proposal becomes a proactive activation (``not_before``, ``deadline``,
``priority``) in the kernel's scheduler only if

- it says what the bot would speak about (a non-empty ``reason``) — nothing to say, nothing said;
- its chat had a real (non-bot) message within ``recent_activity_ms`` — silence is not activity —
  or, for a chat that went silent, the proposal has :class:`~runtime.extensions.spec.Grounds` (an
  open question to the bot, a due follow-up, a memory hook) and someone spoke there within
  ``follow_up_within_ms`` (an open question) or ``dated_within_ms`` (a follow-up or a memory hook:
  grounds that name their own time, days ahead);
- it would not start inside the quiet hours (local time of ``[life] timezone``);
- the tick has not already emitted ``max_proposals_per_tick``.

Whether the bot spoke is said truthfully, per chat: a tick notes each chat it had nothing for
(``nothing to say``: a live chat, or a silent one someone spoke in within the grounds windows) and
each proposal it turned down (with the rule's reason); a proposal it emitted is ``scheduled`` until
the episode driver reports the outcome (:meth:`note_outcome`: spoke, or why not — the model chose
silence, the budget, a closed gate); its grounds are in :attr:`TickReport.grounds`. :meth:`note`
reads the latest for a chat (``/why`` shows it; a silent chat keeps its last real decision rather
than every tick's ``nothing to say``), and the ``life_tick`` / ``proactive_outcome`` log lines say the same.

The activations a registration caused are cancelled when it is disposed. The kernel applies the chat's
budget when they fall due; :meth:`allowed` lets the bot check the chat is still live at that moment.
A source that raises, returns garbage or overruns ``source_timeout_ms`` is logged and counted; the
tick goes on with the others.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import anyio
import structlog

from runtime.config.life import LifeConfig
from runtime.episodes.sink import ActivationSink
from runtime.extensions.chat_activity import ChatActivity
from runtime.extensions.registry import ExtensionRegistry, Registration
from runtime.extensions.spec import Grounds, LifeContext, Proposal, as_proposals
from runtime.kernel.clock import Clock

log = structlog.get_logger("greywind.life")

# Activations remembered per registration for cancellation on disposal; older ones have long fired.
_TRACKED = 64
# Chats whose latest proactive decision is kept for ``/why``.
_NOTED_CHATS = 4_096
#: The payload key that marks an activation the director emitted (and its grounds, if any).
LIFE_MARK = "life"
NOTHING_TO_SAY = "nothing to say"


@dataclass(frozen=True, slots=True)
class LifeSettings:
    enabled: bool = True
    tick: float = 30.0
    quiet_start: int | None = 23 * 60  # minutes after local midnight; None: no quiet hours
    quiet_end: int | None = 8 * 60
    timezone: str = "Asia/Shanghai"
    recent_activity: float = 3_600.0
    max_proposals_per_tick: int = 3
    source_timeout: float = 5.0
    default_deadline: float = 600.0
    follow_up_after: float = 1_800.0
    follow_up_within: float = 86_400.0
    dated_within: float = 604_800.0
    follow_up_max_ahead: float = 604_800.0
    follow_ups_per_chat: int = 5
    follow_up_grace: float = 43_200.0

    @classmethod
    def from_config(cls, config: LifeConfig) -> LifeSettings:
        start = end = None
        if config.quiet_hours:
            a, b = config.quiet_hours.split("-")
            start, end = _minutes(a), _minutes(b)
        return cls(
            enabled=config.enabled,
            tick=config.tick_ms / 1000,
            quiet_start=start,
            quiet_end=end,
            timezone=config.timezone,
            recent_activity=config.recent_activity_ms / 1000,
            max_proposals_per_tick=config.max_proposals_per_tick,
            source_timeout=config.source_timeout_ms / 1000,
            default_deadline=config.default_deadline_ms / 1000,
            follow_up_after=config.follow_up_after_ms / 1000,
            follow_up_within=config.follow_up_within_ms / 1000,
            dated_within=config.dated_within_ms / 1000,
            follow_up_max_ahead=config.follow_up_max_ahead_ms / 1000,
            follow_ups_per_chat=config.follow_ups_per_chat,
            follow_up_grace=config.follow_up_grace_ms / 1000,
        )

    @property
    def grounds_window(self) -> float:
        """The longest a chat may have been silent and still hear a grounded proposal."""
        return max(self.follow_up_within, self.dated_within)

    def grounds_within(self, grounds: Grounds | str) -> float:
        """How long a chat may have been silent for a proposal with ``grounds`` to speak into it: a
        follow-up or a memory hook names its own time (days ahead), an open question goes stale."""
        if Grounds(grounds) is Grounds.OPEN_QUESTION:
            return self.follow_up_within
        return max(self.follow_up_within, self.dated_within)


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    reason: str


@dataclass(frozen=True, slots=True)
class TickReport:
    """What one tick did. It never speaks itself: ``emitted`` are activations that may speak when
    they fall due (the driver reports whether they did); every other live chat is ``silent``."""

    now: float
    quiet: bool
    called: tuple[str, ...]
    emitted: tuple[str, ...]  # activation ids
    suppressed: tuple[tuple[str, str], ...]  # (chat_id, reason)
    failed: tuple[str, ...]
    silent: tuple[tuple[str, str], ...] = ()  # (chat_id, why it says nothing): no proposal, or refused
    grounds: tuple[tuple[str, str], ...] = ()  # (chat_id, grounds) of each emitted proposal that had them


@dataclass(frozen=True, slots=True)
class LifeNote:
    """The latest proactive decision about a chat: ``spoke`` True / False, or None while scheduled."""

    at: float
    spoke: bool | None
    reason: str
    grounds: str | None = None


@dataclass(frozen=True, slots=True)
class DirectorStatistics:
    ticks: int
    timers: int
    tracked_activations: int
    calls: int
    emitted: int
    suppressed_quiet: int
    suppressed_inactive: int
    suppressed_cap: int
    suppressed_no_reason: int
    failures: int
    spoke: int
    stayed_silent: int


class LifeDirector:
    """See the module docstring."""

    def __init__(
        self,
        registry: ExtensionRegistry,
        sink: ActivationSink,
        chats: ChatActivity,
        *,
        clock: Clock,
        settings: LifeSettings,
    ) -> None:
        self._registry = registry
        self._sink = sink
        self._chats = chats
        self._clock = clock
        self._settings = settings
        self._zone = ZoneInfo(settings.timezone)
        self._next_at: dict[str, float] = {}
        self._activations: dict[str, deque[str]] = {}
        self._notes: OrderedDict[str, LifeNote] = OrderedDict()
        self._counts = dict.fromkeys(
            (
                "ticks",
                "calls",
                "emitted",
                "suppressed_quiet",
                "suppressed_inactive",
                "suppressed_cap",
                "suppressed_no_reason",
                "failures",
                "spoke",
                "stayed_silent",
            ),
            0,
        )
        self._unsubscribe = registry.on_removed(self._forget)

    def close(self) -> None:
        """Stop listening to the registry (the director is being dropped)."""
        self._unsubscribe()

    # -- the rules ----------------------------------------------------------------------------

    def quiet_at(self, when: float) -> bool:
        """Whether ``when`` falls inside the configured quiet hours (local time)."""
        start, end = self._settings.quiet_start, self._settings.quiet_end
        if start is None or end is None or start == end:
            return False
        local = datetime.fromtimestamp(when, self._zone)
        minute = local.hour * 60 + local.minute
        return start <= minute < end if start < end else minute >= start or minute < end

    def allowed(
        self, chat_id: str, now: float, at: float | None = None, *, grounds: Grounds | str | None = None
    ) -> Verdict:
        """May a proactive message start in ``chat_id`` at ``at`` (default ``now``)? A chat that went
        silent only with ``grounds`` (and someone spoke there within ``follow_up_within``, or for a
        follow-up or a memory hook ``dated_within``)."""
        at = now if at is None else at
        if self.quiet_at(at):
            return Verdict(False, "quiet_hours")
        last = self._chats.last_activity(chat_id)
        if last is None:
            return Verdict(False, "no_activity: nobody has spoken in this chat")
        if now - last <= self._settings.recent_activity:
            return Verdict(True, "live")
        if grounds and now - last <= self._settings.grounds_within(grounds):
            return Verdict(True, f"silent, but {Grounds(grounds).value}")
        return Verdict(False, f"no_activity: last real message {now - last:.0f} s ago")

    # -- the tick ---------------------------------------------------------------------------

    async def tick(self, now: float | None = None) -> TickReport:
        """Advance what is due, poll what is due, emit what may be emitted."""
        now = self._clock.now() if now is None else now
        self._counts["ticks"] += 1
        quiet = self.quiet_at(now)
        if not self._settings.enabled:
            return TickReport(now, quiet, (), (), (), ())
        since = now - self._settings.recent_activity
        known = now - self._settings.grounds_window
        context = LifeContext(
            now=now,
            active_chats=tuple(self._chats.recent_chats(since)),
            quiet=quiet,
            known_chats=tuple(self._chats.recent_chats(known)),
        )
        called: list[str] = []
        emitted: list[str] = []
        suppressed: list[tuple[str, str]] = []
        failed: list[str] = []
        grounded: list[tuple[str, str]] = []
        spoken_for: set[str] = set()  # chats given an activation by this tick
        for entry in [*self._registry.entries("activity"), *self._registry.entries("life_source")]:
            if now < self._next_at.get(entry.key, now):
                continue
            self._next_at[entry.key] = now + entry.spec.interval
            called.append(entry.key)
            proposals = await self._call(entry, context)
            if proposals is None:
                failed.append(entry.key)
                continue
            if entry.scope.disposed:
                continue  # withdrawn while it ran: what it proposed goes with it
            for proposal in proposals:
                if self._consider(entry, proposal, now, emitted, suppressed):
                    spoken_for.add(proposal.chat_id)
                    if proposal.grounds is not None:
                        grounded.append((proposal.chat_id, proposal.grounds.value))
        silent: dict[str, str] = {}
        for chat_id, why in suppressed:
            if chat_id not in spoken_for:
                silent.setdefault(chat_id, why)
        # Every chat a grounded proposal could still reach, live or silent, hears why not.
        for chat_id in dict.fromkeys((*context.active_chats, *context.known_chats)):
            if chat_id not in spoken_for:
                silent.setdefault(chat_id, "quiet_hours" if quiet else NOTHING_TO_SAY)
        live = set(context.active_chats)
        for chat_id, why in silent.items():
            if chat_id in live or chat_id not in self._notes:
                self._note(chat_id, LifeNote(now, False, why), from_tick=True)
        report = TickReport(
            now,
            quiet,
            tuple(called),
            tuple(emitted),
            tuple(suppressed),
            tuple(failed),
            tuple(silent.items()),
            tuple(grounded),
        )
        say = log.info if emitted or suppressed else log.debug
        say(
            "life_tick",
            spoke=False,  # a tick only schedules: proactive_outcome says whether the bot spoke
            scheduled=len(emitted),
            silent=len(silent),
            reason="scheduled" if emitted else (suppressed[0][1] if suppressed else NOTHING_TO_SAY),
        )
        return report

    async def run(self) -> None:
        """Tick forever, every ``tick`` seconds; meant for the lifespan's task group."""
        while True:
            try:
                await self.tick()
            except Exception as exc:  # a bug here must not stop the persona's life for good
                log.exception("life_tick_failed", error=repr(exc))
            await anyio.sleep(self._settings.tick)

    async def _call(self, entry: Registration, context: LifeContext) -> list[Proposal] | None:
        self._counts["calls"] += 1
        function = entry.spec.advance if entry.kind == "activity" else entry.spec.poll
        try:
            with anyio.move_on_after(self._settings.source_timeout) as scope:
                result = function(context)
                if inspect.isawaitable(result):
                    result = await result
            if scope.cancelled_caught:
                raise TimeoutError(f"no answer within {self._settings.source_timeout:g} s")
            return as_proposals(result)
        except Exception as exc:
            self._counts["failures"] += 1
            log.warning("life_source_failed", source=entry.key, error=repr(exc))
            return None

    def _consider(
        self,
        entry: Registration,
        proposal: Proposal,
        now: float,
        emitted: list[str],
        suppressed: list[tuple[str, str]],
    ) -> bool:
        """Emit ``proposal`` if the rules allow; whether it was."""
        if not proposal.reason.strip():
            self._counts["suppressed_no_reason"] += 1
            suppressed.append((proposal.chat_id, NOTHING_TO_SAY))
            return False
        at = max(now, proposal.not_before if proposal.not_before is not None else now)
        verdict = self.allowed(proposal.chat_id, now, at, grounds=proposal.grounds)
        if not verdict.allowed:
            key = "suppressed_quiet" if verdict.reason == "quiet_hours" else "suppressed_inactive"
            self._counts[key] += 1
            suppressed.append((proposal.chat_id, verdict.reason))
            return False
        if len(emitted) >= self._settings.max_proposals_per_tick:
            self._counts["suppressed_cap"] += 1
            suppressed.append((proposal.chat_id, "tick_cap"))
            return False
        deadline = proposal.deadline
        if deadline is None:
            deadline = at + self._settings.default_deadline
        if deadline < at:
            self._counts["failures"] += 1
            suppressed.append((proposal.chat_id, "deadline_before_not_before"))
            return False
        grounds = proposal.grounds.value if proposal.grounds is not None else None
        payload = {
            **proposal.payload,
            "source": entry.key,
            "reason": proposal.reason,
            LIFE_MARK: grounds or True,
        }
        scheduled = self._sink.schedule_activation(
            proposal.kind,
            proposal.chat_id,
            now=now,
            not_before=at,
            deadline=deadline,
            priority=proposal.priority,
            thread_id=proposal.thread_id,
            payload=payload,
        )
        self._activations.setdefault(entry.key, deque(maxlen=_TRACKED)).append(scheduled.id)
        self._counts["emitted"] += 1
        emitted.append(scheduled.id)
        log.info(
            "proactive_scheduled",
            source=entry.key,
            chat_id=proposal.chat_id,
            event_id=scheduled.id,
            not_before=at,
            reason=proposal.reason,
            grounds=grounds,
        )
        self._note(proposal.chat_id, LifeNote(now, None, f"scheduled: {proposal.reason}", grounds))
        return True

    # -- what became of it ------------------------------------------------------------------------

    def note_outcome(
        self, chat_id: str, event_id: str, *, spoke: bool, reason: str, payload: dict[str, object]
    ) -> None:
        """The episode driver's word on an activation this director emitted: spoke, or why not."""
        now = self._clock.now()
        mark = payload.get(LIFE_MARK)
        grounds = mark if isinstance(mark, str) else None
        about = str(payload.get("reason", ""))
        self._counts["spoke" if spoke else "stayed_silent"] += 1
        why = f"spoke: {about}" if spoke else f"{reason} ({about})" if about else reason
        self._note(chat_id, LifeNote(now, spoke, why, grounds))
        log.info(
            "proactive_outcome",
            chat_id=chat_id,
            event_id=event_id,
            spoke=spoke,
            reason=reason,
            about=about,
            grounds=grounds,
        )

    def note(self, chat_id: str) -> LifeNote | None:
        """The latest proactive decision about ``chat_id`` (a tick's, or an emitted one's outcome)."""
        return self._notes.get(chat_id)

    def _note(self, chat_id: str, note: LifeNote, *, from_tick: bool = False) -> None:
        notes = self._notes
        current = notes.get(chat_id)
        if from_tick and current is not None and current.spoke is None:
            return  # an emitted activation has not run yet: its outcome is the chat's news
        notes[chat_id] = note
        notes.move_to_end(chat_id)
        while len(notes) > _NOTED_CHATS:
            notes.popitem(last=False)

    def _forget(self, entry: Registration) -> None:
        self._next_at.pop(entry.key, None)
        now = self._clock.now()
        for event_id in self._activations.pop(entry.key, ()):
            self._sink.cancel(event_id, now)

    def statistics(self) -> DirectorStatistics:
        return DirectorStatistics(
            timers=len(self._next_at),
            tracked_activations=sum(len(d) for d in self._activations.values()),
            **self._counts,
        )


def _minutes(hhmm: str) -> int:
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)
