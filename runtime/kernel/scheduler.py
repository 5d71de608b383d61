"""The activation scheduler (design/0002 §5): when scheduled events become eligible.

Rules:

- an event is never returned before its ``not_before``;
- an event still pending after its ``deadline`` (``now > deadline``) expires instead;
- events due at the same time come out higher ``priority`` first, then in scheduling order;
- a returned event has been moved to ``eligible``.

Every operation is O(log n) and none scans the pending set. Two queues hold the entries: one ordered by
``(not_before, -priority, seq)`` for :meth:`due`, one by ``(deadline, seq)`` for :meth:`expire` (each a
:class:`_TimeQueue`: lists of entries by 16-second span, the earliest one a heap). Deletion is lazy: an entry
is live only while ``_pending[event_id]`` still holds its ``seq``, so cancelling forgets the id and
snoozing pushes a new entry; stale entries are dropped when they reach a queue's front, and both
queues are rebuilt once stale entries outnumber live ones (amortised O(1)).

The scheduler reads ``not_before``, ``deadline`` and ``priority`` from the event when it is scheduled;
to change them, update the event and schedule it again. It owns the state moves of the events it
holds (``scheduled``/``snoozed`` → ``eligible`` | ``expired`` | ``skipped``) through the
:class:`~runtime.kernel.events.EventStore`, so illegal moves raise there.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from heapq import heapify, heappop, heappush
from typing import Generic, TypeVar

from runtime.kernel.events import BotEvent, EventState, EventStore

__all__ = ["ActivationScheduler", "SchedulerStatistics"]

_WAITING = frozenset({EventState.SCHEDULED, EventState.SNOOZED})
# Members bound once: an Enum class attribute lookup costs ~10x a global lookup.
_SCHEDULED, _SNOOZED, _ELIGIBLE = EventState.SCHEDULED, EventState.SNOOZED, EventState.ELIGIBLE
_EXPIRED, _SKIPPED = EventState.EXPIRED, EventState.SKIPPED
# Rebuild the queues when they hold more than this many entries beyond twice the live count.
_COMPACT_SLACK = 256


# Entries are grouped by span of 2**_SPAN_BITS seconds (16 s). Measured with 140,000 entries over
# 10,000 s: 1 s spans push in 0.33 µs and pop in 0.52 µs, 16 s spans 0.18 and 0.55 µs, 1,024 s spans
# 0.16 and 1.1 µs (one heap: 0.14 and 2.1 µs). Fewer, fuller spans keep their lists in cache; a span
# at the front is a heap of its entries, so a wider one costs more levels per pop.
_SPAN_BITS = 4
# The span of +inf, past every finite float's (-inf and nan get -_FAR: before every one).
_FAR = int(sys.float_info.max) + 1

_E = TypeVar("_E", tuple[float, float, int, str], tuple[float, int, str])


class _TimeQueue(Generic[_E]):
    """A priority queue of tuples that start with a time, kept as one list of entries per time span.

    It pops in exactly the order of one heap of the same tuples: a heap of span numbers says which
    list is first (an entry's span never decreases with its time), and that list is heapified when
    it reaches the front (within a span the tuples are compared whole). Why not one heap: with
    140,000 entries scattered over memory, a heap pop sifts ~17 levels of cold tuples (2.1 µs
    measured) where this sifts a heap of a few hundred ints and one of the entries of one span
    (0.55 µs). A push appends to its span's list without comparing anything: a compare in a cold
    list costs a cache miss (0.5 µs measured). Only a list already at the front is pushed onto as a
    heap.

    Still O(log n) per operation: each list is heapified once at most (amortised O(1) per entry),
    and in the worst case every entry shares one span and this is one heap.
    """

    __slots__ = ("_by_span", "_heaped", "_spans", "size")

    def __init__(self, entries: Iterable[_E] = ()) -> None:
        self._by_span: dict[int, list[_E]] = {}  # never holds an empty list
        self._spans: list[int] = []  # heap of the keys of _by_span
        self._heaped: set[int] = set()  # the spans whose list is a heap
        self.size = 0  # entries held (an attribute: len() through a Python __len__ costs more)
        for entry in entries:
            self.push(entry)

    def __iter__(self) -> Iterator[_E]:
        for entries in self._by_span.values():
            yield from entries

    def push(self, entry: _E) -> None:
        try:
            span = int(entry[0]) >> _SPAN_BITS  # int() truncates, >> floors: both never decrease
        except (OverflowError, ValueError):  # ±inf, nan
            span = _FAR if entry[0] > 0 else -_FAR
        entries = self._by_span.get(span)
        if entries is None:
            self._by_span[span] = [entry]
            heappush(self._spans, span)
        elif span in self._heaped:
            heappush(entries, entry)
        else:
            entries.append(entry)  # ordered once it reaches the front
        self.size += 1

    def first(self) -> _E | None:
        """The smallest entry, left in place (``None`` when empty)."""
        return self._front()[0] if self._spans else None

    def pop_until(self, until: float, inclusive: bool) -> _E | None:
        """Remove and return the smallest entry if its time is before ``until`` (or at it, when
        ``inclusive``); ``None`` otherwise. One call per entry where first() then pop() made four."""
        if not self._spans:
            return None
        entries = self._front()
        at = entries[0][0]
        if not (at <= until if inclusive else at < until):
            return None
        entry = heappop(entries)
        if not entries:
            span = heappop(self._spans)
            del self._by_span[span]
            self._heaped.discard(span)
        self.size -= 1
        return entry

    def _front(self) -> list[_E]:
        """The list of the earliest span, as a heap."""
        span = self._spans[0]
        entries = self._by_span[span]
        if span not in self._heaped:
            heapify(entries)
            self._heaped.add(span)
        return entries


@dataclass(frozen=True, slots=True)
class SchedulerStatistics:
    pending: int
    next_at: float | None
    next_deadline: float | None
    heap_entries: int
    scheduled: int
    returned: int
    expired: int
    cancelled: int
    snoozed: int
    compactions: int


class ActivationScheduler:
    """Pending activations over an :class:`EventStore`; see the module docstring for the rules."""

    __slots__ = ("_counts", "_deadlines", "_due", "_expired", "_pending", "_seq", "store")

    def __init__(self, store: EventStore) -> None:
        self.store = store
        # Entries (not_before, -priority, seq, id) and (deadline, seq, id).
        self._due: _TimeQueue[tuple[float, float, int, str]] = _TimeQueue()
        self._deadlines: _TimeQueue[tuple[float, int, str]] = _TimeQueue()
        self._pending: dict[str, int] = {}  # id -> seq of its live entries
        self._seq = 0
        # Events expired while due() ran, handed out by the next expire().
        self._expired: list[BotEvent] = []
        # scheduled, returned, expired, cancelled, snoozed, compactions
        self._counts = [0, 0, 0, 0, 0, 0]

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._pending

    def pending_ids(self) -> Iterator[str]:
        return iter(self._pending)

    # -- scheduling ------------------------------------------------------------------------------

    def schedule(self, event_id: str, now: float) -> BotEvent:
        """Hold the event until its ``not_before``; moves it to ``scheduled`` unless it is waiting."""
        event = self.store.require(event_id)
        if event.state not in _WAITING:
            event = self.store.transition(event_id, _SCHEDULED, now)
        self._push(event)
        self._counts[0] += 1
        return event

    def schedule_event(self, event: BotEvent, now: float) -> BotEvent:
        """:meth:`schedule` for an event the caller holds as the store has it (no lookup)."""
        if event.state not in _WAITING:
            event = self.store.transition(event.id, _SCHEDULED, now)
        self._push(event)
        self._counts[0] += 1
        return event

    def snooze(self, event_id: str, until: float, now: float) -> BotEvent:
        """Put the event off until ``until`` (its new ``not_before``); it comes back as ``eligible``."""
        store = self.store
        event = store.require(event_id)
        if event.state is _SNOOZED:
            event = store.update(event_id, now, not_before=until)
        else:  # the move and the new time in one step
            event = store.transition(event_id, _SNOOZED, now, not_before=until)
        self._push(event)
        self._counts[4] += 1
        return event

    def cancel(self, event_id: str, now: float, *, reason: str | None = None) -> bool:
        """Withdraw a pending event and mark it ``skipped`` (with ``reason`` in its payload).

        Returns ``False`` when the event was not pending (never scheduled, already due or gone).
        """
        if self._pending.pop(event_id, None) is None:
            return False
        self._counts[3] += 1
        event = self.store.get(event_id)
        if event is not None and event.state in _WAITING:
            payload = None if reason is None else _with(event.payload, skip_reason=reason)
            self.store.transition(event_id, _SKIPPED, now, payload=payload)
        self._maybe_compact()
        return True

    def forget(self, event_id: str) -> bool:
        """Stop holding the event without touching its state (someone else has moved it on)."""
        if self._pending.pop(event_id, None) is None:
            return False
        self._maybe_compact()
        return True

    def restore(self, events: Iterable[BotEvent]) -> int:
        """Hold again the ``scheduled``/``snoozed`` events persistence put back into the store."""
        restored = 0
        for event in events:
            if event.state in _WAITING and event.id in self.store:
                self._push(event)
                restored += 1
        return restored

    # -- taking events out -----------------------------------------------------------------------

    def due(self, now: float, limit: int | None = None) -> list[BotEvent]:
        """Pending events whose time has come, now ``eligible``; past-deadline ones expire instead."""
        self._expire_into_buffer(now)
        queue = self._due
        pending = self._pending
        store = self.store
        out: list[BotEvent] = []
        while limit is None or len(out) < limit:
            entry = queue.pop_until(now, True)
            if entry is None:
                break
            _, _, seq, event_id = entry
            if pending.get(event_id) != seq:
                continue
            del pending[event_id]
            event = store.get(event_id)
            if event is None or event.state not in _WAITING:
                continue  # removed or moved on behind the scheduler's back: nothing to activate
            out.append(store.transition(event_id, _ELIGIBLE, now))
        if out:
            self._counts[1] += len(out)
            self._maybe_compact()  # returned events leave stale deadline entries behind
        return out

    pop_due = due

    def expire(self, now: float) -> list[BotEvent]:
        """Expire every pending event past its deadline; also returns those :meth:`due` expired."""
        self._expire_into_buffer(now)
        expired, self._expired = self._expired, []
        return expired

    def next_at(self) -> float | None:
        """The earliest ``not_before`` among pending events (``None`` when nothing is pending)."""
        queue = self._due
        pending = self._pending
        while (first := queue.first()) is not None and pending.get(first[3]) != first[2]:
            queue.pop_until(first[0], True)  # drops that stale first entry
        return None if first is None else first[0]

    def next_deadline(self) -> float | None:
        """The earliest deadline among pending events: after it, :meth:`expire` has work."""
        queue = self._deadlines
        pending = self._pending
        while (first := queue.first()) is not None and pending.get(first[2]) != first[1]:
            queue.pop_until(first[0], True)  # drops that stale first entry
        return None if first is None else first[0]

    def statistics(self) -> SchedulerStatistics:
        scheduled, returned, expired, cancelled, snoozed, compactions = self._counts
        return SchedulerStatistics(
            pending=len(self._pending),
            next_at=self.next_at(),
            next_deadline=self.next_deadline(),
            heap_entries=self._due.size + self._deadlines.size,
            scheduled=scheduled,
            returned=returned,
            expired=expired,
            cancelled=cancelled,
            snoozed=snoozed,
            compactions=compactions,
        )

    # -- internals -------------------------------------------------------------------------------

    def _push(self, event: BotEvent) -> None:
        self._seq += 1
        seq = self._seq
        replacing = event.id in self._pending
        self._pending[event.id] = seq
        self._due.push((event.not_before, -event.priority, seq, event.id))
        if event.deadline is not None:
            self._deadlines.push((event.deadline, seq, event.id))
        if replacing:
            self._maybe_compact()

    def _expire_into_buffer(self, now: float) -> None:
        queue = self._deadlines
        pending = self._pending
        while (entry := queue.pop_until(now, False)) is not None:
            _, seq, event_id = entry
            if pending.get(event_id) != seq:
                continue
            del pending[event_id]
            event = self.store.get(event_id)
            if event is None or event.state not in _WAITING:
                continue
            self._expired.append(self.store.transition(event_id, _EXPIRED, now))
            self._counts[2] += 1

    def _maybe_compact(self) -> None:
        live = len(self._pending)
        limit = 2 * live + _COMPACT_SLACK
        if self._due.size <= limit and self._deadlines.size <= limit:
            return
        pending = self._pending
        self._due = _TimeQueue(e for e in self._due if pending.get(e[3]) == e[2])
        self._deadlines = _TimeQueue(e for e in self._deadlines if pending.get(e[2]) == e[1])
        self._counts[5] += 1


def _with(payload: Mapping[str, object], **extra: object) -> dict[str, object]:
    merged = dict(payload)
    merged.update(extra)
    return merged
