"""Bot events (design/0002 §3): what the bot might act on, and the store that holds them.

An event is born ``captured`` when a message (or a timer, or a life source) gives the bot something to
consider, and ends ``replied``, ``skipped`` or ``expired``. Every move between states goes through
:meth:`EventStore.transition`, which allows only the moves in :data:`TRANSITIONS`; anything else raises
:class:`~runtime.kernel.errors.IllegalTransition`. The store keeps live events for as long as they live
and drops terminal ones by age (:meth:`EventStore.prune`) and by count (at once, when a transition
pushes the number of terminal events past the cap), so it stays bounded in a bot that runs for months.

Faults (see ``runtime.kernel.errors``): ``UnknownEvent`` for an id the store does not hold,
``IllegalTransition`` for a forbidden move, ``InvalidSetting`` for bad store limits. Passing ``state``
or an unknown field to :meth:`EventStore.update` is a programming error and raises ``TypeError``.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from runtime.kernel._build import builder
from runtime.kernel.errors import IllegalTransition, InvalidSetting, UnknownEvent
from runtime.kernel.ids import IdFactory, counter_ids

__all__ = [
    "TERMINAL_STATES",
    "TRANSITIONS",
    "BotEvent",
    "EventState",
    "EventStore",
    "EventStoreStatistics",
]


class EventState(StrEnum):
    CAPTURED = "captured"
    CLASSIFIED = "classified"
    LINKED = "linked"
    SCHEDULED = "scheduled"
    ELIGIBLE = "eligible"
    DELIBERATING = "deliberating"
    REPLIED = "replied"
    SKIPPED = "skipped"
    SNOOZED = "snoozed"
    EXPIRED = "expired"


_S = EventState

# The legal moves. Linking (thread) and classifying (attention) may happen in either order because
# attention reads thread continuity. Every live state may be skipped (cancelled, superseded, judged
# not worth a reply) or expire (deadline passed). An eligible event blocked by the budget goes back to
# scheduled; a snoozed one comes back as scheduled or straight to eligible.
TRANSITIONS: Mapping[EventState, frozenset[EventState]] = MappingProxyType(
    {
        _S.CAPTURED: frozenset({_S.CLASSIFIED, _S.LINKED, _S.SKIPPED, _S.EXPIRED}),
        _S.CLASSIFIED: frozenset({_S.LINKED, _S.SCHEDULED, _S.ELIGIBLE, _S.SKIPPED, _S.EXPIRED}),
        _S.LINKED: frozenset({_S.CLASSIFIED, _S.SCHEDULED, _S.ELIGIBLE, _S.SKIPPED, _S.EXPIRED}),
        _S.SCHEDULED: frozenset({_S.ELIGIBLE, _S.SNOOZED, _S.SKIPPED, _S.EXPIRED}),
        _S.ELIGIBLE: frozenset({_S.DELIBERATING, _S.SCHEDULED, _S.SNOOZED, _S.SKIPPED, _S.EXPIRED}),
        _S.DELIBERATING: frozenset({_S.REPLIED, _S.SKIPPED, _S.SNOOZED, _S.EXPIRED}),
        _S.SNOOZED: frozenset({_S.SCHEDULED, _S.ELIGIBLE, _S.SKIPPED, _S.EXPIRED}),
        _S.REPLIED: frozenset(),
        _S.SKIPPED: frozenset(),
        _S.EXPIRED: frozenset(),
    }
)

TERMINAL_STATES: frozenset[EventState] = frozenset(s for s, nxt in TRANSITIONS.items() if not nxt)


def _moves_from_captured() -> dict[EventState, int]:
    """Each state reachable from ``captured`` -> the length of the shortest legal path to it."""
    moves = {_S.CAPTURED: 0}
    frontier = [_S.CAPTURED]
    while frontier:
        following = []
        for state in frontier:
            for target in TRANSITIONS[state]:
                if target not in moves:
                    moves[target] = moves[state] + 1
                    following.append(target)
        frontier = following
    return moves


_MOVES_FROM_CAPTURED = _moves_from_captured()
_CAPTURED = _S.CAPTURED

_EMPTY_PAYLOAD: Mapping[str, object] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class BotEvent:
    """One thing the bot may act on. Immutable: the store replaces it on every change."""

    id: str
    kind: str
    chat_id: str
    thread_id: str | None
    actor_ids: tuple[str, ...]
    evidence_message_ids: tuple[str, ...]
    created_at: float
    updated_at: float
    not_before: float
    deadline: float | None
    priority: float
    state: EventState
    payload: Mapping[str, object]

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


# Every field, positionally, set through the slots: this runs several times per message.
_event = builder(BotEvent)

_FIXED = frozenset({"id", "state", "created_at", "updated_at"})
_PATCHABLE = frozenset(f.name for f in dataclasses.fields(BotEvent)) - _FIXED


@dataclass(frozen=True, slots=True)
class EventStoreStatistics:
    live: int
    terminal: int
    by_state: tuple[tuple[str, int], ...]
    created: int
    transitions: int
    pruned: int
    restored: int


def _frozen_payload(payload: Mapping[str, object] | None) -> Mapping[str, object]:
    if not payload:
        return _EMPTY_PAYLOAD
    return MappingProxyType(dict(payload))


def _taken_payload(payload: Mapping[str, object] | None) -> Mapping[str, object]:
    """A payload the store takes over (:meth:`EventStore.add`): read-only, not copied."""
    if not payload:
        return _EMPTY_PAYLOAD
    return payload if payload.__class__ is MappingProxyType else MappingProxyType(payload)


class EventStore:
    """All events of the running bot, by id, with per-chat and per-state indexes."""

    __slots__ = (
        "_by_chat",
        "_counts",
        "_created",
        "_events",
        "_ids",
        "_keep_terminal_for",
        "_max_terminal",
        "_pruned",
        "_restored",
        "_terminal",
        "_terminal_unsorted",
        "_transitions",
    )

    def __init__(
        self,
        *,
        ids: IdFactory | None = None,
        keep_terminal_for: float = 3_600.0,
        max_terminal: int = 10_000,
    ) -> None:
        if keep_terminal_for < 0:
            raise InvalidSetting("events.keep_terminal_for", "must not be negative")
        if max_terminal < 0:
            raise InvalidSetting("events.max_terminal", "must not be negative")
        self._ids = ids if ids is not None else counter_ids()
        self._keep_terminal_for = keep_terminal_for
        self._max_terminal = max_terminal
        self._events: dict[str, BotEvent] = {}
        self._by_chat: dict[str, dict[str, None]] = {}
        # Terminal ids in the order they became terminal, so pruning pops from the front.
        self._terminal: OrderedDict[str, float] = OrderedDict()
        # Set when a restore put a terminal event behind a newer one; prune sorts once then. Only a
        # restore: while serving, a message recorded as skipped at once carries its message's time
        # (whole seconds) and a transition the clock's, so the order is off by a second here and
        # there, which keeps such an event that much longer; sorting every terminal event at every
        # prune for it held the loop for all of them each minute.
        self._terminal_unsorted = False
        self._counts: dict[EventState, int] = dict.fromkeys(EventState, 0)
        self._created = 0
        self._transitions = 0
        self._pruned = 0
        self._restored = 0

    def __len__(self) -> int:
        return len(self._events)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._events

    # -- creation and lookup ---------------------------------------------------------------------

    def create(
        self,
        *,
        kind: str,
        chat_id: str,
        now: float,
        thread_id: str | None = None,
        actor_ids: Iterable[str] = (),
        evidence_message_ids: Iterable[str] = (),
        not_before: float | None = None,
        deadline: float | None = None,
        priority: float = 0.0,
        payload: Mapping[str, object] | None = None,
        state: EventState = EventState.CAPTURED,
    ) -> BotEvent:
        """A new event; ``not_before`` defaults to ``now``.

        It is born ``captured``, or directly in ``state`` when the caller already knows where it goes
        (the kernel records a message it judged not worth a reply as ``skipped`` at once): the moves
        from ``captured`` to ``state`` must be legal, and they count in ``statistics().transitions``
        as if made one by one along the shortest legal path. :class:`IllegalTransition` otherwise.
        """
        return self.add(
            kind,
            chat_id,
            now,
            thread_id,
            tuple(actor_ids),  # a tuple is returned as it is
            tuple(evidence_message_ids),
            not_before,
            deadline,
            priority,
            _frozen_payload(payload),  # a copy: the caller may go on using its mapping
            state,
        )

    def add(
        self,
        kind: str,
        chat_id: str,
        now: float,
        thread_id: str | None,
        actor_ids: tuple[str, ...],
        evidence_message_ids: tuple[str, ...],
        not_before: float | None,
        deadline: float | None,
        priority: float,
        payload: Mapping[str, object] | None,
        state: EventState,
        /,
    ) -> BotEvent:
        """:meth:`create` with every field given in order, the ids already tuples: the kernel makes
        one event per message, and ten keyword arguments cost more than the event's own fields.

        The store takes ``payload`` over instead of copying it (pass a mapping nobody changes
        afterwards, such as a dict made for the call).
        """
        if state.__class__ is not EventState:
            state = EventState(state)
        moves = _MOVES_FROM_CAPTURED.get(state)
        if moves is None:
            raise IllegalTransition("a new event", _CAPTURED.value, state.value)
        event_id = self._ids("ev")
        events = self._events
        while event_id in events:  # a restored event may already hold a counter id
            event_id = self._ids("ev")
        event = _event(
            event_id,
            kind,
            chat_id,
            thread_id,
            actor_ids,
            evidence_message_ids,
            now,
            now,
            now if not_before is None else not_before,
            deadline,
            priority,
            state,
            _taken_payload(payload),
        )
        self._insert(event)
        self._created += 1
        if moves:
            self._transitions += moves
            if len(self._terminal) > self._max_terminal:
                self._enforce_count()
        return event

    def get(self, event_id: str) -> BotEvent | None:
        return self._events.get(event_id)

    def require(self, event_id: str) -> BotEvent:
        """The event, or :class:`UnknownEvent`."""
        event = self._events.get(event_id)
        if event is None:
            raise UnknownEvent(event_id)
        return event

    def list(
        self,
        *,
        chat_id: str | None = None,
        thread_id: str | None = None,
        states: Collection[EventState] | None = None,
    ) -> list[BotEvent]:
        """Events matching every filter given, oldest first."""
        if chat_id is not None:
            pool: Iterable[BotEvent] = (self._events[i] for i in self._by_chat.get(chat_id, ()))
        else:
            pool = self._events.values()
        wanted = frozenset(states) if states is not None else None
        return [
            e
            for e in pool
            if (thread_id is None or e.thread_id == thread_id) and (wanted is None or e.state in wanted)
        ]

    # -- changes ---------------------------------------------------------------------------------

    def update(self, event_id: str, now: float, **patch: object) -> BotEvent:
        """Replace fields other than the state (use :meth:`transition` for that)."""
        event = self.require(event_id)
        bad = set(patch) - _PATCHABLE
        if bad:
            raise TypeError(f"cannot update event field(s): {', '.join(sorted(bad))}")
        if "payload" in patch:
            patch["payload"] = _frozen_payload(patch["payload"])  # type: ignore[arg-type]
        for name in ("actor_ids", "evidence_message_ids"):
            value = patch.get(name)
            if isinstance(value, Iterable) and not isinstance(value, str):
                patch[name] = tuple(value)
        if "chat_id" in patch and patch["chat_id"] != event.chat_id:
            self._unindex_chat(event)
        get = patch.get
        updated = _event(
            event.id,
            get("kind", event.kind),
            get("chat_id", event.chat_id),
            get("thread_id", event.thread_id),
            get("actor_ids", event.actor_ids),
            get("evidence_message_ids", event.evidence_message_ids),
            event.created_at,
            now,
            get("not_before", event.not_before),
            get("deadline", event.deadline),
            get("priority", event.priority),
            event.state,
            get("payload", event.payload),
        )
        self._events[event_id] = updated
        self._by_chat.setdefault(updated.chat_id, {})[event_id] = None
        return updated

    def transition(
        self,
        event_id: str,
        state: EventState,
        now: float,
        *,
        not_before: float | None = None,
        payload: Mapping[str, object] | None = None,
    ) -> BotEvent:
        """Move the event to ``state``; :class:`IllegalTransition` unless :data:`TRANSITIONS` allows it.

        ``not_before`` and ``payload``, when given, replace the event's in the same step (a snooze,
        a skip with its reason): one new value instead of an :meth:`update` and a move, and
        nothing changes when the move is refused.
        """
        event = self._events.get(event_id)
        if event is None:
            raise UnknownEvent(event_id)
        target = state if state.__class__ is EventState else EventState(state)
        current = event.state
        if target not in TRANSITIONS[current]:
            raise IllegalTransition(f"event {event_id}", current.value, target.value)
        # Built directly: dataclasses.replace() costs several times as much.
        updated = _event(
            event.id,
            event.kind,
            event.chat_id,
            event.thread_id,
            event.actor_ids,
            event.evidence_message_ids,
            event.created_at,
            now,
            event.not_before if not_before is None else not_before,
            event.deadline,
            event.priority,
            target,
            event.payload if payload is None else _frozen_payload(payload),
        )
        self._events[event_id] = updated
        counts = self._counts
        counts[current] -= 1
        counts[target] += 1
        self._transitions += 1
        if target in TERMINAL_STATES:
            self._terminal[event_id] = now
            if len(self._terminal) > self._max_terminal:
                self._enforce_count()
        return updated

    def can_transition(self, event_id: str, state: EventState) -> bool:
        event = self._events.get(event_id)
        return event is not None and EventState(state) in TRANSITIONS[event.state]

    def restore(self, event: BotEvent) -> None:
        """Put back an event read from storage (replacing one with the same id)."""
        old = self._events.get(event.id)
        if old is not None:
            self._remove(old)
        terminal = self._terminal
        if (
            event.state in TERMINAL_STATES
            and terminal
            and event.updated_at < next(reversed(terminal.values()))
        ):
            self._terminal_unsorted = True
        self._insert(event)
        self._restored += 1
        if event.state in TERMINAL_STATES:
            self._enforce_count()

    def prune(self, now: float) -> int:
        """Drop terminal events older than the retention age; returns how many went. The work is
        the events dropped, not the events kept (a sort of them all only after a restore that put
        old ones behind newer ones)."""
        cutoff = now - self._keep_terminal_for
        if self._terminal_unsorted:
            self._terminal = OrderedDict(sorted(self._terminal.items(), key=lambda kv: kv[1]))
            self._terminal_unsorted = False
        dropped = 0
        while self._terminal:
            event_id, ended_at = next(iter(self._terminal.items()))
            if ended_at > cutoff:
                break
            self._remove(self._events[event_id])
            dropped += 1
        self._pruned += dropped
        return dropped

    # -- statistics ------------------------------------------------------------------------------

    def statistics(self) -> EventStoreStatistics:
        terminal = len(self._terminal)
        return EventStoreStatistics(
            live=len(self._events) - terminal,
            terminal=terminal,
            by_state=tuple((s.value, n) for s, n in self._counts.items() if n),
            created=self._created,
            transitions=self._transitions,
            pruned=self._pruned,
            restored=self._restored,
        )

    # -- internals -------------------------------------------------------------------------------

    def _insert(self, event: BotEvent) -> None:
        self._events[event.id] = event
        ids = self._by_chat.get(event.chat_id)  # not setdefault(): that makes a dict every call
        if ids is None:
            ids = self._by_chat[event.chat_id] = {}
        ids[event.id] = None
        self._counts[event.state] += 1
        if event.state in TERMINAL_STATES:
            self._terminal[event.id] = event.updated_at

    def _remove(self, event: BotEvent) -> None:
        del self._events[event.id]
        self._unindex_chat(event)
        self._counts[event.state] -= 1
        self._terminal.pop(event.id, None)

    def _unindex_chat(self, event: BotEvent) -> None:
        ids = self._by_chat.get(event.chat_id)
        if ids is not None:
            ids.pop(event.id, None)
            if not ids:
                del self._by_chat[event.chat_id]

    def _enforce_count(self) -> None:
        terminal = self._terminal
        while len(terminal) > self._max_terminal:
            oldest, _ = terminal.popitem(last=False)
            self._remove(self._events[oldest])
            self._pruned += 1
