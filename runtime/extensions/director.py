"""The LifeDirector: the tick that advances activities and polls life sources.

Every ``[life] tick_ms`` the lifespan calls :meth:`LifeDirector.tick` (or runs :meth:`run` in its task
group). Each activity / life source is called when its own ``interval`` has passed — one timer per
registration, held here and dropped when the registration goes. What they return are
:class:`Proposal` values; a proposal becomes a proactive activation (``not_before``, ``deadline``,
``priority``) in the kernel's scheduler only if

- its chat had a real (non-bot) message within ``recent_activity_ms`` — silence is not activity;
- it would not start inside the quiet hours (local time of ``[life] timezone``);
- the tick has not already emitted ``max_proposals_per_tick``.

The activations a registration caused are cancelled when it is disposed. The kernel applies the chat's
budget when they fall due; :meth:`allowed` lets the bot check the chat is still live at that moment.
A source that raises, returns garbage or overruns ``source_timeout_ms`` is logged and counted; the
tick goes on with the others.
"""

from __future__ import annotations

import inspect
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

import anyio
import structlog

from runtime.config.life import LifeConfig
from runtime.episodes.sink import ActivationSink
from runtime.extensions.chat_activity import ChatActivity
from runtime.extensions.registry import ExtensionRegistry, Registration
from runtime.extensions.spec import LifeContext, Proposal, as_proposals
from runtime.kernel.clock import Clock

log = structlog.get_logger("greywind.life")

# Activations remembered per registration for cancellation on disposal; older ones have long fired.
_TRACKED = 64


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
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    reason: str


@dataclass(frozen=True, slots=True)
class TickReport:
    now: float
    quiet: bool
    called: tuple[str, ...]
    emitted: tuple[str, ...]  # activation ids
    suppressed: tuple[tuple[str, str], ...]  # (chat_id, reason)
    failed: tuple[str, ...]


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
    failures: int


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
        self._counts = dict.fromkeys(
            (
                "ticks",
                "calls",
                "emitted",
                "suppressed_quiet",
                "suppressed_inactive",
                "suppressed_cap",
                "failures",
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

    def allowed(self, chat_id: str, now: float, at: float | None = None) -> Verdict:
        """May a proactive message start in ``chat_id`` at ``at`` (default ``now``)?"""
        at = now if at is None else at
        if self.quiet_at(at):
            return Verdict(False, "quiet_hours")
        last = self._chats.last_activity(chat_id)
        if last is None:
            return Verdict(False, "no_activity: nobody has spoken in this chat")
        if now - last > self._settings.recent_activity:
            return Verdict(False, f"no_activity: last real message {now - last:.0f} s ago")
        return Verdict(True, "live")

    # -- the tick ---------------------------------------------------------------------------

    async def tick(self, now: float | None = None) -> TickReport:
        """Advance what is due, poll what is due, emit what may be emitted."""
        now = self._clock.now() if now is None else now
        self._counts["ticks"] += 1
        quiet = self.quiet_at(now)
        if not self._settings.enabled:
            return TickReport(now, quiet, (), (), (), ())
        since = now - self._settings.recent_activity
        context = LifeContext(now=now, active_chats=tuple(self._chats.recent_chats(since)), quiet=quiet)
        called: list[str] = []
        emitted: list[str] = []
        suppressed: list[tuple[str, str]] = []
        failed: list[str] = []
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
                self._consider(entry, proposal, now, emitted, suppressed)
        return TickReport(now, quiet, tuple(called), tuple(emitted), tuple(suppressed), tuple(failed))

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
    ) -> None:
        at = max(now, proposal.not_before if proposal.not_before is not None else now)
        verdict = self.allowed(proposal.chat_id, now, at)
        if not verdict.allowed:
            key = "suppressed_quiet" if verdict.reason == "quiet_hours" else "suppressed_inactive"
            self._counts[key] += 1
            suppressed.append((proposal.chat_id, verdict.reason))
            return
        if len(emitted) >= self._settings.max_proposals_per_tick:
            self._counts["suppressed_cap"] += 1
            suppressed.append((proposal.chat_id, "tick_cap"))
            return
        deadline = proposal.deadline
        if deadline is None:
            deadline = at + self._settings.default_deadline
        if deadline < at:
            self._counts["failures"] += 1
            suppressed.append((proposal.chat_id, "deadline_before_not_before"))
            return
        payload = {**proposal.payload, "source": entry.key, "reason": proposal.reason}
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
        )

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
