"""Budgets (design/0002 §13, the group row): cooldown, window count, independence, forced budget."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.kernel.budget import BudgetPolicy, Budgets
from runtime.kernel.errors import InvalidSetting

NORMAL = BudgetPolicy(min_interval=90.0, max_per_window=4, window=1800.0)
FORCED = BudgetPolicy(min_interval=3.0, max_per_window=20, window=600.0)


def make() -> Budgets:
    return Budgets(NORMAL, FORCED)


def test_fresh_chat_may_speak() -> None:
    verdict = make().actor("group:1").can_speak(0.0)
    assert verdict.allowed
    assert verdict.retry_at is None


def test_cooldown_refuses_until_min_interval_then_allows() -> None:
    actor = make().actor("group:1")
    actor.record_speech(100.0)
    verdict = actor.can_speak(150.0)
    assert not verdict.allowed
    assert "cooldown" in verdict.reason
    assert verdict.retry_at == 190.0
    assert actor.can_speak(verdict.retry_at).allowed


def test_window_count_refuses_the_fifth_speech_until_the_first_leaves() -> None:
    actor = make().actor("group:1")
    for i in range(4):
        t = i * 100.0
        assert actor.can_speak(t).allowed
        actor.record_speech(t)
    verdict = actor.can_speak(400.0)
    assert not verdict.allowed
    assert "window full" in verdict.reason
    assert verdict.retry_at == 1800.0
    assert not actor.can_speak(1799.0).allowed
    assert actor.can_speak(1800.0).allowed


def test_chats_are_independent() -> None:
    budgets = make()
    budgets.record_speech("group:1", 0.0)
    assert not budgets.can_speak("group:1", 10.0).allowed
    assert budgets.can_speak("group:2", 10.0).allowed
    assert budgets.actor("private:9").can_speak(10.0).allowed


def test_forced_reply_has_its_own_larger_budget() -> None:
    actor = make().actor("group:1")
    # The normal window is spent...
    for i in range(4):
        actor.record_speech(i * 100.0)
    assert not actor.can_speak(400.0).allowed
    # ...but replies to people who call the bot still go out, up to the forced budget.
    assert actor.can_speak(400.0, forced=True).allowed
    actor.record_speech(400.0, forced=True)
    verdict = actor.can_speak(401.0, forced=True)
    assert not verdict.allowed
    assert verdict.retry_at == 403.0


def test_forced_speech_delays_chiming_in_but_does_not_spend_the_normal_window() -> None:
    actor = make().actor("group:1")
    actor.record_speech(0.0, forced=True)
    verdict = actor.can_speak(30.0)
    assert not verdict.allowed
    assert verdict.retry_at == 90.0
    for i in range(10):
        actor.record_speech(100.0 + i * 5, forced=True)
    # Forced replies never count against the normal window: after the cooldown, it is open.
    assert actor.can_speak(145.0 + 90.0).allowed


def test_forced_window_full() -> None:
    budgets = Budgets(NORMAL, BudgetPolicy(min_interval=0.0, max_per_window=2, window=60.0))
    actor = budgets.actor("private:7")
    actor.record_speech(0.0, forced=True)
    actor.record_speech(1.0, forced=True)
    verdict = actor.can_speak(2.0, forced=True)
    assert not verdict.allowed
    assert verdict.retry_at == 60.0
    assert "forced window full" in verdict.reason


def test_when_both_rules_refuse_retry_at_is_the_later() -> None:
    budgets = Budgets(BudgetPolicy(min_interval=100.0, max_per_window=1, window=50.0), FORCED)
    actor = budgets.actor("group:1")
    actor.record_speech(0.0)
    verdict = actor.can_speak(10.0)
    assert verdict.retry_at == 100.0
    assert actor.can_speak(100.0).allowed


def test_restore_resumes_cooldown_and_window() -> None:
    saved = make()
    for t, forced in [(0.0, False), (100.0, True), (200.0, False), (300.0, False), (400.0, False)]:
        saved.record_speech("group:1", t, forced=forced)
    restored = make()
    restored.restore("group:1", saved.actor("group:1").speeches())
    for now in (410.0, 1000.0, 1799.0, 1800.0, 2000.0):
        assert restored.can_speak("group:1", now) == saved.can_speak("group:1", now)
    assert not restored.can_speak("group:1", 450.0).allowed
    assert restored.can_speak("group:1", 1800.0).allowed


def test_note_event_and_statistics() -> None:
    budgets = make()
    actor = budgets.actor("group:1")
    actor.note_event("ev-1")
    actor.record_speech(0.0)
    actor.can_speak(1.0)
    actor.record_speech(5.0, forced=True)
    stats = actor.statistics(now=10.0)
    assert (stats.normal_in_window, stats.forced_in_window) == (1, 1)
    assert stats.refusals == 1
    assert stats.events_noted == 1
    assert actor.recent_events() == ("ev-1",)
    total = budgets.statistics()
    assert (total.chats, total.speeches, total.forced_speeches, total.refusals) == (1, 2, 1, 1)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"min_interval": -1.0, "max_per_window": 1, "window": 1.0}, "min_interval"),
        ({"min_interval": 0.0, "max_per_window": 0, "window": 1.0}, "max_per_window"),
        ({"min_interval": 0.0, "max_per_window": 1, "window": 0.0}, "window"),
    ],
)
def test_bad_policy_is_refused_naming_the_setting(kwargs: dict[str, float], key: str) -> None:
    with pytest.raises(InvalidSetting, match=key):
        BudgetPolicy(**kwargs)  # type: ignore[arg-type]


policies = st.builds(
    BudgetPolicy,
    min_interval=st.floats(min_value=0.0, max_value=50.0),
    max_per_window=st.integers(min_value=1, max_value=6),
    window=st.floats(min_value=0.5, max_value=300.0),
)
steps = st.lists(
    st.tuples(st.floats(min_value=0.0, max_value=40.0), st.booleans(), st.booleans()), max_size=120
)


@settings(max_examples=300, deadline=None)
@given(normal=policies, forced=policies, steps=steps)
def test_no_sequence_exceeds_a_window_or_the_cooldown(
    normal: BudgetPolicy, forced: BudgetPolicy, steps: list[tuple[float, bool, bool]]
) -> None:
    actor = Budgets(normal, forced).actor("group:1")
    now = 0.0
    spoken: list[tuple[float, bool]] = []
    for gap, is_forced, use_retry in steps:
        now += gap
        verdict = actor.can_speak(now, forced=is_forced)
        if not verdict.allowed:
            assert verdict.retry_at is not None
            assert verdict.retry_at > now
            if not use_retry:
                continue
            # Asking again at retry_at must succeed: the refusal named the true earliest time.
            now = verdict.retry_at
            verdict = actor.can_speak(now, forced=is_forced)
            assert verdict.allowed
        actor.record_speech(now, forced=is_forced)
        spoken.append((now, is_forced))

    for kind, policy in ((False, normal), (True, forced)):
        times = [t for t, f in spoken if f is kind]
        # Never more than max_per_window inside any window: the window starting at each speech.
        for i, start in enumerate(times):
            assert sum(1 for t in times[i:] if t < start + policy.window) <= policy.max_per_window
    # Every speech waited its own kind's cooldown after the bot's previous speech of any kind.
    for (before, _), (after, kind) in itertools.pairwise(spoken):
        policy = forced if kind else normal
        assert after >= before + policy.min_interval


def test_peek_answers_like_can_speak_without_counting_a_refusal() -> None:
    actor = make().actor("group:1")
    actor.record_speech(0.0)
    assert actor.peek(10.0) == actor.can_speak(10.0)
    actor.peek(20.0)
    assert actor.statistics().refusals == 1
