"""EventStore: design/0002's states, only legal moves, bounded memory, restore; and the id factories."""

from __future__ import annotations

import dataclasses
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.kernel.clock import ManualClock
from runtime.kernel.errors import IllegalTransition, InvalidSetting, UnknownEvent
from runtime.kernel.events import TERMINAL_STATES, TRANSITIONS, BotEvent, EventState, EventStore
from runtime.kernel.ids import CounterIds, UniqueIds

S = EventState


def _walk(store: EventStore, event_id: str, *states: EventState, now: float = 0.0) -> BotEvent:
    event = store.require(event_id)
    for state in states:
        event = store.transition(event_id, state, now)
    return event


# -- ids ----------------------------------------------------------------------------------------


def test_counter_ids_count_per_prefix_and_are_reproducible() -> None:
    a, b = CounterIds(), CounterIds()
    seq_a = [a("ev"), a("ev"), a("th"), a("ev")]
    seq_b = [b("ev"), b("ev"), b("th"), b("ev")]
    assert seq_a == ["ev-1", "ev-2", "th-1", "ev-3"]
    assert seq_a == seq_b


def test_unique_ids_differ_across_restarts_at_the_same_instant() -> None:
    clock = ManualClock(1_767_225_600.0)
    first_run = UniqueIds(clock)
    second_run = UniqueIds(clock)  # a restart within the same millisecond
    made = {first_run("ev") for _ in range(100)} | {second_run("ev") for _ in range(100)}
    assert len(made) == 200
    assert all(i.startswith("ev-") for i in made)


def test_unique_ids_sort_by_time() -> None:
    clock = ManualClock(1_700_000_000.0)
    ids = UniqueIds(clock, entropy=lambda n: "00" * n)
    early = ids("th")
    clock.advance(5.0)
    late = ids("th")
    assert early < late


# -- events: design/0002 §3 ----------------------------------------------------------------------


def test_create_starts_captured_with_defaults() -> None:
    store = EventStore()
    event = store.create(
        kind="message", chat_id="group:1", now=10.0, actor_ids=["42"], evidence_message_ids=["7"]
    )
    assert event.id == "ev-1"
    assert event.state is S.CAPTURED
    assert event.not_before == 10.0
    assert event.deadline is None
    assert event.actor_ids == ("42",)
    assert event.evidence_message_ids == ("7",)
    assert store.get("ev-1") == event
    assert store.get("ev-404") is None


def test_payload_is_copied_and_read_only() -> None:
    store = EventStore()
    source: dict[str, object] = {"text": "hi"}
    event = store.create(kind="message", chat_id="group:1", now=0.0, payload=source)
    source["text"] = "changed"
    assert event.payload["text"] == "hi"
    with pytest.raises(TypeError):
        event.payload["text"] = "x"  # type: ignore[index]


def test_the_ordinary_lifecycle_of_a_scheduled_reply() -> None:
    store = EventStore()
    e = store.create(kind="message", chat_id="group:1", now=0.0)
    done = _walk(store, e.id, S.LINKED, S.CLASSIFIED, S.SCHEDULED, S.ELIGIBLE, S.DELIBERATING, S.REPLIED)
    assert done.state is S.REPLIED
    assert done.terminal


def test_snooze_and_budget_block_come_back() -> None:
    store = EventStore()
    e = store.create(kind="message", chat_id="group:1", now=0.0)
    blocked_then_snoozed = (S.CLASSIFIED, S.SCHEDULED, S.ELIGIBLE, S.SCHEDULED, S.ELIGIBLE, S.DELIBERATING)
    _walk(store, e.id, *blocked_then_snoozed, S.SNOOZED)
    assert _walk(store, e.id, S.ELIGIBLE, S.DELIBERATING, S.SKIPPED).state is S.SKIPPED


@pytest.mark.parametrize(
    ("path", "illegal"),
    [
        ((), S.REPLIED),  # captured straight to replied: no deliberation happened
        ((), S.DELIBERATING),
        ((S.CLASSIFIED,), S.DELIBERATING),  # must become eligible first
        ((S.CLASSIFIED, S.SCHEDULED), S.REPLIED),
        ((S.CLASSIFIED, S.SKIPPED), S.SCHEDULED),  # terminal stays terminal
        ((S.EXPIRED,), S.CAPTURED),
        ((S.CLASSIFIED,), S.CLASSIFIED),  # no self moves
    ],
)
def test_illegal_transitions_are_refused_and_change_nothing(
    path: tuple[EventState, ...], illegal: EventState
) -> None:
    store = EventStore()
    e = store.create(kind="message", chat_id="group:1", now=0.0)
    before = _walk(store, e.id, *path)
    with pytest.raises(IllegalTransition) as info:
        store.transition(e.id, illegal, 1.0)
    assert illegal.value in str(info.value)
    assert store.get(e.id) == before


def test_transition_table_covers_every_state_and_terminals_have_no_exit() -> None:
    assert set(TRANSITIONS) == set(EventState)
    assert {S.REPLIED, S.SKIPPED, S.EXPIRED} == TERMINAL_STATES
    for state, targets in TRANSITIONS.items():
        assert state not in targets
        if state not in TERMINAL_STATES:
            assert S.EXPIRED in targets, state  # every live event can run out of time


def test_unknown_ids_raise() -> None:
    store = EventStore()
    with pytest.raises(UnknownEvent):
        store.transition("ev-9", S.SKIPPED, 0.0)
    with pytest.raises(UnknownEvent):
        store.update("ev-9", 0.0, priority=1.0)


def test_update_changes_fields_and_time_but_never_the_state() -> None:
    store = EventStore()
    e = store.create(kind="message", chat_id="group:1", now=0.0)
    updated = store.update(e.id, 5.0, thread_id="th-3", priority=0.7, deadline=60.0, actor_ids=["1", "2"])
    assert (updated.thread_id, updated.priority, updated.deadline) == ("th-3", 0.7, 60.0)
    assert updated.actor_ids == ("1", "2")
    assert updated.updated_at == 5.0
    assert updated.created_at == 0.0
    with pytest.raises(TypeError):
        store.update(e.id, 6.0, state=S.REPLIED)
    with pytest.raises(TypeError):
        store.update(e.id, 6.0, colour="red")
    assert store.require(e.id).state is S.CAPTURED


def test_list_filters_by_chat_thread_and_state() -> None:
    store = EventStore()
    a = store.create(kind="message", chat_id="group:1", now=0.0, thread_id="th-1")
    b = store.create(kind="message", chat_id="group:1", now=1.0, thread_id="th-2")
    c = store.create(kind="message", chat_id="group:2", now=2.0, thread_id="th-3")
    store.transition(b.id, S.SKIPPED, 3.0)
    assert [e.id for e in store.list(chat_id="group:1")] == [a.id, b.id]
    assert [e.id for e in store.list(thread_id="th-3")] == [c.id]
    assert [e.id for e in store.list(states={S.CAPTURED})] == [a.id, c.id]
    assert [e.id for e in store.list(chat_id="group:1", states={S.SKIPPED})] == [b.id]
    assert store.list(chat_id="group:404") == []


# -- bounded -------------------------------------------------------------------------------------


def test_prune_drops_only_old_terminal_events() -> None:
    store = EventStore(keep_terminal_for=60.0)
    old_done = store.create(kind="message", chat_id="group:1", now=0.0)
    store.transition(old_done.id, S.SKIPPED, 10.0)
    old_live = store.create(kind="message", chat_id="group:1", now=0.0)
    new_done = store.create(kind="message", chat_id="group:1", now=50.0)
    store.transition(new_done.id, S.EXPIRED, 50.0)
    assert store.prune(now=100.0) == 1
    assert store.get(old_done.id) is None
    assert store.get(old_live.id) is not None  # live events are never pruned, however old
    assert store.get(new_done.id) is not None
    assert store.list(chat_id="group:1") == [store.require(old_live.id), store.require(new_done.id)]
    assert store.statistics().pruned == 1


def test_terminal_events_are_capped_by_count_at_once() -> None:
    store = EventStore(max_terminal=3)
    for i in range(10):
        e = store.create(kind="message", chat_id="group:1", now=float(i))
        store.transition(e.id, S.SKIPPED, float(i))
    stats = store.statistics()
    assert stats.terminal == 3
    assert len(store) == 3
    assert [e.id for e in store.list()] == ["ev-8", "ev-9", "ev-10"]


def test_bad_limits_are_refused_by_name() -> None:
    with pytest.raises(InvalidSetting, match="keep_terminal_for"):
        EventStore(keep_terminal_for=-1.0)
    with pytest.raises(InvalidSetting, match="max_terminal"):
        EventStore(max_terminal=-1)


# -- persistence ---------------------------------------------------------------------------------


def test_restore_puts_events_back_and_new_ids_do_not_collide() -> None:
    first = EventStore()
    a = first.create(kind="message", chat_id="group:1", now=0.0)
    b = first.create(kind="timer", chat_id="group:1", now=1.0, not_before=30.0, payload={"n": 1})
    first.transition(b.id, S.CLASSIFIED, 2.0)
    first.transition(b.id, S.SCHEDULED, 2.0)

    second = EventStore()  # a restart: same deterministic counter, starting again at ev-1
    for event in (a, first.require(b.id)):
        second.restore(event)
    assert second.require(b.id).state is S.SCHEDULED
    assert second.require(b.id).payload == {"n": 1}
    fresh = second.create(kind="message", chat_id="group:1", now=3.0)
    assert fresh.id not in {a.id, b.id}
    assert len(second) == 3
    # restored events carry on through the machine
    assert second.transition(b.id, S.ELIGIBLE, 31.0).state is S.ELIGIBLE
    assert second.statistics().restored == 2


def test_restore_replaces_an_event_with_the_same_id() -> None:
    store = EventStore()
    e = store.create(kind="message", chat_id="group:1", now=0.0)
    store.restore(dataclasses.replace(e, chat_id="group:2", state=S.SKIPPED))
    assert store.list(chat_id="group:1") == []
    assert [x.id for x in store.list(chat_id="group:2")] == [e.id]
    stats = store.statistics()
    assert (stats.live, stats.terminal) == (0, 1)


def test_prune_finds_old_events_restored_after_newer_ones() -> None:
    store = EventStore(keep_terminal_for=60.0)
    created = store.create(kind="message", chat_id="group:1", now=500.0)
    fresh = store.transition(created.id, S.SKIPPED, 500.0)
    stale = dataclasses.replace(fresh, id="ev-old", created_at=0.0, updated_at=10.0)
    store.restore(stale)  # storage handed it back after the newer one
    assert store.prune(now=520.0) == 1
    assert store.get("ev-old") is None
    assert store.get(fresh.id) is not None


def test_prune_does_not_walk_every_kept_event_when_skips_and_transitions_interleave() -> None:
    """While serving, a message recorded as skipped at once carries its message's time (whole
    seconds) and a transition the clock's, so terminal events arrive a second out of order all the
    time. Housekeeping prunes every minute on the loop: its work must be what it drops, not a sort of
    every terminal event kept."""
    store = EventStore(keep_terminal_for=3_600.0, max_terminal=200_000)
    for i in range(50_000):
        done = store.create(kind="message", chat_id="group:1", now=1_000.0 + i)
        store.transition(done.id, S.EXPIRED, 1_000.5 + i)  # the clock's time
        store.create(kind="message", chat_id="group:1", now=1_000.0 + i, state=S.SKIPPED)  # a message's
    assert store.statistics().terminal == 100_000
    spent = []
    for minute in range(3):  # a minute's messages, then the minute's prune
        at = 1_000.0 + 50_000 + minute
        done = store.create(kind="message", chat_id="group:1", now=at)
        store.transition(done.id, S.EXPIRED, at + 0.5)
        store.create(kind="message", chat_id="group:1", now=at, state=S.SKIPPED)
        started = time.thread_time()
        assert store.prune(now=999.0 + 3_600.0) == 0  # nothing is old enough yet
        spent.append(time.thread_time() - started)
    assert min(spent) < 0.010, f"prune took {min(spent) * 1000:.0f} ms of CPU with nothing to drop"
    # What is old enough still goes (an event behind one a second newer goes with it, at the next prune).
    assert store.prune(now=1_000.0 + 3_600.0 + 1_000.0) == 2_000
    assert store.prune(now=1_000.0 + 3_600.0 + 60_000.0) == 98_006
    assert store.statistics().terminal == 0


def test_statistics_count_states() -> None:
    store = EventStore()
    for _ in range(3):
        store.create(kind="message", chat_id="group:1", now=0.0)
    store.transition("ev-1", S.CLASSIFIED, 0.0)
    stats = store.statistics()
    assert dict(stats.by_state) == {"captured": 2, "classified": 1}
    assert (stats.created, stats.transitions, stats.live) == (3, 1, 3)


# -- property: the machine never leaves the table ----------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list(EventState)), max_size=30))
def test_random_moves_follow_the_table_exactly(moves: list[EventState]) -> None:
    store = EventStore()
    event_id = store.create(kind="message", chat_id="group:1", now=0.0).id
    state = EventState.CAPTURED
    for step, target in enumerate(moves):
        if target in TRANSITIONS[state]:
            assert store.transition(event_id, target, float(step)).state is target
            state = target
        else:
            with pytest.raises(IllegalTransition):
                store.transition(event_id, target, float(step))
        assert store.require(event_id).state is state
    stats = store.statistics()
    assert (stats.live, stats.terminal) == ((0, 1) if state in TERMINAL_STATES else (1, 0))


def test_add_in_order_makes_the_event_create_makes_and_create_still_copies_its_payload() -> None:
    """The positional add() (the kernel's per-message path) and create() make the same event;
    create() copies the payload it is given, so the caller's dict changing later changes nothing."""
    by_create, by_add = EventStore(), EventStore()
    payload: dict[str, object] = {"decision": "medium", "reasons": ("keyword 猫粮 +0.15",)}
    created = by_create.create(
        kind="message",
        chat_id="group:1",
        now=5.0,
        thread_id="th-1",
        actor_ids=["u1"],
        evidence_message_ids=("m1",),
        not_before=7.0,
        deadline=65.0,
        priority=0.4,
        payload=payload,
        state=EventState.SCHEDULED,
    )
    added = by_add.add(
        "message",
        "group:1",
        5.0,
        "th-1",
        ("u1",),
        ("m1",),
        7.0,
        65.0,
        0.4,
        dict(payload),
        EventState.SCHEDULED,
    )
    assert added == created
    assert by_add.statistics() == by_create.statistics()
    payload["decision"] = "high"
    assert created.payload["decision"] == "medium"
