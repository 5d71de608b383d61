"""Speech budgets: how often the bot may speak in one chat (design/0002 §6).

Every chat has its own :class:`GroupActor` with two independent budgets:

- the **normal** budget (``[budget]``) governs speech the bot chooses on its own: scheduled
  activations, proactive messages, joining a conversation;
- the **forced** budget (``[budget.forced]``) governs replies to an @, a reply to the bot or a private
  message. It is larger, and forced replies do not spend the normal window, so answering the people who
  call the bot never uses up its room to chime in.

Each budget is a cooldown (``min_interval``) plus a sliding-window count (at most ``max_per_window``
speeches within any ``window`` seconds). The cooldown is measured from the bot's last speech of *any*
kind in that chat: a forced reply just now means "don't chime in for a while", and a bot that has just
chimed in still waits the (short) forced cooldown before it answers an @. The window counts only
speeches of its own kind.

The rules are exact, with the same float expressions in checks and in ``retry_at``, so that asking
again at ``retry_at`` is allowed:

- cooldown: allowed when ``now >= last_speech + min_interval``;
- window: a speech at ``t`` is in the window at ``now`` while ``t + window > now``; allowed when fewer
  than ``max_per_window`` are in it. Then no interval ``[a, a + window)`` ever holds more than
  ``max_per_window`` allowed speeches.

``record_speech`` records a fact (the bot did speak) and never refuses; only ``can_speak`` decides.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache

from runtime.kernel._build import builder
from runtime.kernel.errors import InvalidSetting

__all__ = [
    "BudgetPolicy",
    "BudgetVerdict",
    "Budgets",
    "BudgetsStatistics",
    "GroupActor",
    "GroupActorStatistics",
]

# Event ids a chat remembers for ``note_event`` (diagnostics only; the EventStore holds the events).
_RECENT_EVENTS = 32


@dataclass(frozen=True, slots=True)
class BudgetPolicy:
    """One budget: cooldown ``min_interval`` seconds, at most ``max_per_window`` per ``window`` seconds."""

    min_interval: float
    max_per_window: int
    window: float

    def __post_init__(self) -> None:
        if not self.min_interval >= 0:
            raise InvalidSetting("min_interval", f"must be >= 0 seconds, got {self.min_interval!r}")
        if self.max_per_window < 1:
            raise InvalidSetting("max_per_window", f"must be >= 1, got {self.max_per_window!r}")
        if not self.window > 0:
            raise InvalidSetting("window", f"must be > 0 seconds, got {self.window!r}")


@dataclass(frozen=True, slots=True)
class BudgetVerdict:
    """Whether the bot may speak now; when not, why and the earliest time asking again can succeed."""

    allowed: bool
    reason: str
    retry_at: float | None = None

    def retry_by(self, deadline: float | None) -> float | None:
        """A refusal's ``retry_at`` when it comes by ``deadline`` (``None``: no deadline), else ``None``:
        when a refused activation may be asked again, or ``None`` when it is to be dropped."""
        retry = self.retry_at
        if self.allowed or retry is None or (deadline is not None and retry > deadline):
            return None
        return retry


_OPEN_NORMAL = BudgetVerdict(True, "normal budget open")
_OPEN_FORCED = BudgetVerdict(True, "forced budget open")
# Positional, through the slots: attention asks every message, and a refusal is common in a busy chat.
_verdict = builder(BudgetVerdict)


@dataclass(frozen=True, slots=True)
class GroupActorStatistics:
    chat_id: str
    normal_in_window: int
    forced_in_window: int
    last_speech_at: float | None
    speeches: int
    forced_speeches: int
    refusals: int
    events_noted: int


@cache
def _refusal_reasons(policy: BudgetPolicy, kind: str) -> tuple[str, str]:
    """What a refusal of ``kind``'s budget says: its window is full, or its cooldown runs."""
    return (
        f"{kind} window full ({policy.max_per_window} per {policy.window:g}s)",
        f"{kind} cooldown ({policy.min_interval:g}s after the last speech)",
    )


class _Window:
    """The most recent ``max_per_window`` speech times of one kind: enough to decide exactly."""

    __slots__ = ("cooldown_reason", "full_reason", "policy", "times")

    def __init__(self, policy: BudgetPolicy, kind: str) -> None:
        self.policy = policy
        # Only the newest max_per_window times matter: the window is full iff the oldest of them is in it.
        self.times: deque[float] = deque(maxlen=policy.max_per_window)
        # A refusal's reason depends on the policy alone: written once, not on every refusal.
        self.full_reason, self.cooldown_reason = _refusal_reasons(policy, kind)

    def in_window(self, now: float) -> int:
        window = self.policy.window
        return sum(1 for t in self.times if t + window > now)

    def full_until(self, now: float) -> float | None:
        """When the window has room again, or ``None`` if it has room now."""
        times = self.times
        if len(times) < self.policy.max_per_window:
            return None
        until = times[0] + self.policy.window
        return until if until > now else None


class GroupActor:
    """The budgets of one chat. Made by :class:`Budgets`; see the module docstring for the rules."""

    __slots__ = ("_forced", "_last_speech", "_normal", "_recent_events", "_stats", "chat_id")

    def __init__(self, chat_id: str, normal: BudgetPolicy, forced: BudgetPolicy) -> None:
        self.chat_id = chat_id
        self._normal = _Window(normal, "normal")
        self._forced = _Window(forced, "forced")
        self._last_speech: float | None = None
        self._recent_events: deque[str] = deque(maxlen=_RECENT_EVENTS)
        # speeches, forced speeches, refusals, events noted
        self._stats = [0, 0, 0, 0]

    @property
    def last_speech_at(self) -> float | None:
        return self._last_speech

    def can_speak(self, now: float, *, forced: bool = False) -> BudgetVerdict:
        """May the bot speak in this chat at ``now``? A refusal carries ``retry_at`` and is counted."""
        verdict = self.peek(now, forced=forced)
        if not verdict.allowed:
            self._stats[2] += 1
        return verdict

    def peek(self, now: float, *, forced: bool = False) -> BudgetVerdict:
        """:meth:`can_speak` without counting a refusal (attention asks on every message)."""
        window = self._forced if forced else self._normal
        cooldown_until: float | None = None
        last = self._last_speech
        if last is not None:
            until = last + window.policy.min_interval
            if now < until:
                cooldown_until = until
        full_until = window.full_until(now)
        if cooldown_until is None and full_until is None:
            return _OPEN_FORCED if forced else _OPEN_NORMAL
        # When both hold, the later time is the first moment both are clear.
        if full_until is not None and (cooldown_until is None or full_until >= cooldown_until):
            return _verdict(False, window.full_reason, full_until)
        return _verdict(False, window.cooldown_reason, cooldown_until)

    def record_speech(self, now: float, *, forced: bool = False) -> None:
        """The bot spoke in this chat at ``now`` (recorded even when a budget would have refused)."""
        (self._forced if forced else self._normal).times.append(now)
        if self._last_speech is None or now > self._last_speech:
            self._last_speech = now
        self._stats[0] += 1
        if forced:
            self._stats[1] += 1

    def note_event(self, event_id: str) -> None:
        """Remember that an event concerns this chat (for diagnostics and ``statistics``)."""
        self._recent_events.append(event_id)
        self._stats[3] += 1

    def recent_events(self) -> tuple[str, ...]:
        return tuple(self._recent_events)

    def speeches(self) -> Iterator[tuple[float, bool]]:
        """The remembered speeches as ``(time, forced)``, oldest first: what persistence saves."""
        merged = [(t, False) for t in self._normal.times] + [(t, True) for t in self._forced.times]
        merged.sort()
        return iter(merged)

    def statistics(self, now: float | None = None) -> GroupActorStatistics:
        at = self._last_speech if now is None else now
        normal = self._normal.in_window(at) if at is not None else 0
        forced = self._forced.in_window(at) if at is not None else 0
        speeches, forced_speeches, refusals, noted = self._stats
        return GroupActorStatistics(
            self.chat_id, normal, forced, self._last_speech, speeches, forced_speeches, refusals, noted
        )


@dataclass(frozen=True, slots=True)
class BudgetsStatistics:
    chats: int
    speeches: int
    forced_speeches: int
    refusals: int


class Budgets:
    """Every chat's :class:`GroupActor`, made on first use; chats never share a budget."""

    __slots__ = ("_actors", "forced", "normal")

    def __init__(self, normal: BudgetPolicy, forced: BudgetPolicy) -> None:
        self.normal = normal
        self.forced = forced
        self._actors: dict[str, GroupActor] = {}

    def actor(self, chat_id: str) -> GroupActor:
        actor = self._actors.get(chat_id)
        if actor is None:
            actor = self._actors[chat_id] = GroupActor(chat_id, self.normal, self.forced)
        return actor

    def get(self, chat_id: str) -> GroupActor | None:
        """The chat's actor if it exists; never creates one."""
        return self._actors.get(chat_id)

    def can_speak(self, chat_id: str, now: float, *, forced: bool = False) -> BudgetVerdict:
        actor = self._actors.get(chat_id)
        if actor is None:
            return _OPEN_FORCED if forced else _OPEN_NORMAL
        return actor.can_speak(now, forced=forced)

    def record_speech(self, chat_id: str, now: float, *, forced: bool = False) -> None:
        self.actor(chat_id).record_speech(now, forced=forced)

    def restore(self, chat_id: str, speeches: Iterable[tuple[float, bool]]) -> None:
        """Put saved speeches ``(time, forced)`` back on start; cooldowns and windows resume."""
        actor = self.actor(chat_id)
        for when, forced in sorted(speeches):
            actor.record_speech(when, forced=forced)

    def chats(self) -> Iterator[str]:
        return iter(self._actors)

    def statistics(self) -> BudgetsStatistics:
        speeches = forced = refusals = 0
        for actor in self._actors.values():
            s = actor._stats
            speeches += s[0]
            forced += s[1]
            refusals += s[2]
        return BudgetsStatistics(len(self._actors), speeches, forced, refusals)
