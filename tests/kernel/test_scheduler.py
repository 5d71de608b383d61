"""ActivationScheduler (design/0002 §13 "scheduler: notBefore、deadline、优先级、snooze")."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.kernel.errors import UnknownEvent
from runtime.kernel.events import EventState, EventStore
from runtime.kernel.scheduler import ActivationScheduler


def make() -> tuple[EventStore, ActivationScheduler]:
    store = EventStore()
    return store, ActivationScheduler(store)


def add(
    store: EventStore,
    sched: ActivationScheduler,
    *,
    at: float,
    deadline: float | None = None,
    priority: float = 0.0,
    chat: str = "group:1",
) -> str:
    event = store.create(
        kind="message", chat_id=chat, now=0.0, not_before=at, deadline=deadline, priority=priority
    )
    store.transition(event.id, EventState.CLASSIFIED, 0.0)
    sched.schedule(event.id, 0.0)
    return event.id


def test_never_returned_before_not_before() -> None:
    store, sched = make()
    ev = add(store, sched, at=10.0)
    assert store.require(ev).state is EventState.SCHEDULED
    assert sched.due(9.999) == []
    out = sched.due(10.0)
    assert [e.id for e in out] == [ev]
    assert out[0].state is EventState.ELIGIBLE
    assert store.require(ev).state is EventState.ELIGIBLE
    assert sched.due(11.0) == []  # returned once only
    assert len(sched) == 0


def test_past_deadline_expires_instead_of_becoming_due() -> None:
    store, sched = make()
    late = add(store, sched, at=10.0, deadline=20.0)
    fine = add(store, sched, at=10.0, deadline=40.0)
    assert sched.due(30.0) == [store.require(fine)]
    assert store.require(late).state is EventState.EXPIRED
    expired = sched.expire(30.0)
    assert [e.id for e in expired] == [late]
    assert sched.expire(31.0) == []


def test_deadline_itself_is_still_in_time() -> None:
    store, sched = make()
    ev = add(store, sched, at=10.0, deadline=20.0)
    assert sched.expire(20.0) == []
    assert [e.id for e in sched.due(20.0)] == [ev]


def test_expire_without_due() -> None:
    store, sched = make()
    ev = add(store, sched, at=100.0, deadline=50.0)
    assert sched.next_deadline() == 50.0
    assert [e.state for e in sched.expire(60.0)] == [EventState.EXPIRED]
    assert ev not in sched
    assert sched.next_at() is None


def test_same_time_higher_priority_first_then_fifo() -> None:
    store, sched = make()
    low = add(store, sched, at=5.0, priority=0.1)
    high = add(store, sched, at=5.0, priority=0.9)
    mid_a = add(store, sched, at=5.0, priority=0.5)
    mid_b = add(store, sched, at=5.0, priority=0.5)
    assert [e.id for e in sched.due(5.0)] == [high, mid_a, mid_b, low]


def test_limit_leaves_the_rest_pending_in_order() -> None:
    store, sched = make()
    ids = [add(store, sched, at=float(i)) for i in range(5)]
    assert [e.id for e in sched.due(10.0, limit=2)] == ids[:2]
    assert sched.next_at() == 2.0
    assert [e.id for e in sched.due(10.0)] == ids[2:]


def test_snooze_moves_the_time_and_returns_as_eligible() -> None:
    store, sched = make()
    ev = add(store, sched, at=5.0)
    sched.snooze(ev, 50.0, now=1.0)
    assert store.require(ev).state is EventState.SNOOZED
    assert sched.due(10.0) == []
    assert sched.next_at() == 50.0
    out = sched.due(50.0)
    assert [(e.id, e.state) for e in out] == [(ev, EventState.ELIGIBLE)]


def test_snooze_an_event_under_deliberation() -> None:
    store, sched = make()
    ev = add(store, sched, at=1.0)
    sched.due(1.0)
    store.transition(ev, EventState.DELIBERATING, 1.0)
    sched.snooze(ev, 30.0, now=2.0)
    assert [e.id for e in sched.due(30.0)] == [ev]


def test_cancel_skips_with_reason_and_reports_whether_pending() -> None:
    store, sched = make()
    ev = add(store, sched, at=5.0)
    other = add(store, sched, at=6.0)
    assert sched.cancel(ev, now=1.0, reason="superseded by ev-9")
    skipped = store.require(ev)
    assert skipped.state is EventState.SKIPPED
    assert skipped.payload["skip_reason"] == "superseded by ev-9"
    assert not sched.cancel(ev, now=1.0)
    assert sched.next_at() == 6.0
    assert [e.id for e in sched.due(10.0)] == [other]
    assert not sched.cancel(other, now=11.0)  # already returned


def test_reschedule_replaces_the_old_entry() -> None:
    store, sched = make()
    ev = add(store, sched, at=5.0)
    store.update(ev, 1.0, not_before=20.0)
    sched.schedule(ev, 1.0)
    assert sched.due(10.0) == []
    assert [e.id for e in sched.due(20.0)] == [ev]


def test_event_moved_on_elsewhere_is_not_activated() -> None:
    store, sched = make()
    ev = add(store, sched, at=5.0)
    store.transition(ev, EventState.SKIPPED, 1.0)
    assert sched.due(5.0) == []


def test_unknown_event_is_a_fault() -> None:
    _, sched = make()
    with pytest.raises(UnknownEvent):
        sched.schedule("ev-404", 0.0)


def test_restore_holds_waiting_events_again() -> None:
    store, sched = make()
    ev = add(store, sched, at=5.0, deadline=9.0)
    saved = store.require(ev)
    fresh_store = EventStore()
    fresh_store.restore(saved)
    fresh = ActivationScheduler(fresh_store)
    assert fresh.restore([saved]) == 1
    assert fresh.next_at() == 5.0
    assert [e.id for e in fresh.due(6.0)] == [ev]


def test_many_cancels_compact_the_heaps() -> None:
    store, sched = make()
    ids = [add(store, sched, at=float(i), deadline=1e9) for i in range(2_000)]
    for ev in ids[:-1]:
        sched.cancel(ev, now=0.0)
    stats = sched.statistics()
    assert stats.pending == 1
    assert stats.compactions >= 1
    assert stats.heap_entries < 2 * 256 + 10
    assert [e.id for e in sched.due(1e6)] == [ids[-1]]


def test_statistics_count_what_happened() -> None:
    store, sched = make()
    a = add(store, sched, at=1.0)
    add(store, sched, at=2.0, deadline=3.0)
    c = add(store, sched, at=100.0)
    sched.snooze(a, 1.5, now=0.5)
    sched.cancel(c, now=0.5)
    sched.due(10.0)
    stats = sched.statistics()
    assert (stats.scheduled, stats.snoozed, stats.cancelled, stats.returned, stats.expired) == (3, 1, 1, 1, 1)
    assert stats.pending == 0
    assert stats.next_at is None


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.integers(0, 50),
            st.one_of(st.none(), st.integers(0, 60)),
            st.sampled_from([0.0, 0.5, 1.0]),
        ),
        st.tuples(st.just("tick"), st.integers(0, 10), st.one_of(st.none(), st.integers(1, 3)), st.just(0.0)),
        st.tuples(st.just("cancel"), st.integers(0, 40), st.none(), st.just(0.0)),
        st.tuples(st.just("snooze"), st.integers(0, 40), st.integers(0, 20), st.just(0.0)),
    ),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(ops=ops)
def test_order_and_time_bounds_hold_for_any_sequence(ops: list[tuple[str, int, int | None, float]]) -> None:
    store, sched = make()
    now = 0.0
    created: list[str] = []
    returned: set[str] = set()
    for op, a, b, prio in ops:
        if op == "add":
            event = store.create(
                kind="t",
                chat_id="group:1",
                now=now,
                not_before=now + a,
                deadline=None if b is None else now + b,
                priority=prio,
            )
            store.transition(event.id, EventState.CLASSIFIED, now)
            sched.schedule(event.id, now)
            created.append(event.id)
        elif op == "cancel" and created:
            sched.cancel(created[a % len(created)], now)
        elif op == "snooze" and created:
            ev = created[a % len(created)]
            if ev in sched:
                sched.snooze(ev, now + (b or 0), now)
        elif op == "tick":
            now += a
            out = sched.due(now, limit=b)
            for e in out:
                assert e.state is EventState.ELIGIBLE
                assert e.not_before <= now
                assert e.deadline is None or e.deadline >= now
                assert e.id not in returned
                returned.add(e.id)
            keys = [(e.not_before, -e.priority) for e in out]
            assert keys == sorted(keys)
            # Whatever is still pending is not yet due, unless the limit held it back.
            next_at = sched.next_at()
            if b is None or len(out) < b:
                assert next_at is None or next_at > now
            for e in sched.expire(now):
                assert e.deadline is not None
                assert e.deadline < now
    # Nothing pending is past its deadline once expired, and every pending id is waiting.
    sched.expire(now)
    for ev in sched.pending_ids():
        event = store.require(ev)
        assert event.state in (EventState.SCHEDULED, EventState.SNOOZED)
        assert event.deadline is None or event.deadline >= now


def test_forget_lets_go_without_touching_the_state() -> None:
    store, sched = make()
    ev = add(store, sched, at=5.0)
    assert sched.forget(ev)
    assert not sched.forget(ev)
    assert store.require(ev).state is EventState.SCHEDULED
    assert sched.due(10.0) == []
