"""Compression triggers as pure functions: every N rounds, a token threshold, session start, and the
counters across a compression that ran while rounds kept coming."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.config import parse_config
from runtime.memory.triggers import (
    Counters,
    TriggerReason,
    TriggerSettings,
    after_compression,
    note_round,
    note_session_start,
)

SETTINGS = TriggerSettings(every_n_rounds=10, token_threshold=50_000, force_on_session_start=True)


def play(rounds: int, tokens: int, settings: TriggerSettings = SETTINGS) -> list[tuple[int, TriggerReason]]:
    """Rounds of ``tokens`` each, compressing (successfully) whenever due; (round, reason) fired."""
    counters = Counters()
    fired = []
    for n in range(1, rounds + 1):
        check = note_round(counters, tokens, settings)
        counters = check.counters
        if check.reason is not None:
            fired.append((n, check.reason))
            counters = after_compression(counters, counters)
    return fired


def test_every_tenth_round_fires_and_nothing_between() -> None:
    assert [n for n, _ in play(35, 100)] == [10, 20, 30]
    assert {reason for _, reason in play(35, 100)} == {TriggerReason.ROUNDS}


def test_long_rounds_fire_on_tokens_first() -> None:
    fired = play(10, 20_000)
    assert fired[0] == (3, TriggerReason.TOKENS)
    # Each compression resets both counters, so the tenth round is not due (one round since round 9).
    assert [n for n, _ in fired] == [3, 6, 9]


def test_the_config_section_maps_onto_settings() -> None:
    section = parse_config(
        {"memory_injection": {"compression_trigger": {"every_n_rounds": 4, "force_on_session_start": False}}}
    ).memory_injection.compression_trigger
    assert TriggerSettings.from_config(section) == TriggerSettings(4, 50_000, False)


def test_a_due_compression_stays_due_until_it_succeeds() -> None:
    counters = Counters(rounds_processed=10, rounds_since=10, tokens_since=900)
    check = note_round(counters, 50, SETTINGS)
    assert check.reason is TriggerReason.ROUNDS
    assert note_session_start(check.counters, SETTINGS).reason is TriggerReason.ROUNDS


def test_session_start_forces_only_when_there_is_something_new() -> None:
    assert note_session_start(Counters(), SETTINGS).reason is None
    assert note_session_start(Counters(5, 0, 0), SETTINGS).reason is None
    assert note_session_start(Counters(5, 2, 80), SETTINGS).reason is TriggerReason.SESSION_START
    quiet = TriggerSettings(force_on_session_start=False)
    assert note_session_start(Counters(5, 2, 80), quiet).reason is None


def test_rounds_noted_while_the_model_worked_count_toward_the_next() -> None:
    snapshot = Counters(rounds_processed=10, rounds_since=10, tokens_since=1_000)
    meanwhile = Counters(rounds_processed=12, rounds_since=12, tokens_since=1_250)
    assert after_compression(meanwhile, snapshot) == Counters(12, 2, 250)


def test_bad_settings_and_negative_tokens_are_refused() -> None:
    with pytest.raises(ValueError):
        TriggerSettings(every_n_rounds=0)
    with pytest.raises(ValueError):
        note_round(Counters(), -1, SETTINGS)


@given(st.lists(st.integers(min_value=0, max_value=30_000), max_size=80), st.integers(1, 15))
def test_never_more_than_n_rounds_or_threshold_tokens_go_uncompressed(sizes: list[int], n: int) -> None:
    settings = TriggerSettings(every_n_rounds=n, token_threshold=40_000)
    counters = Counters()
    for size in sizes:
        check = note_round(counters, size, settings)
        counters = check.counters
        assert check.due == (counters.rounds_since >= n or counters.tokens_since >= 40_000)
        if check.due:
            counters = after_compression(counters, counters)
        assert counters.rounds_since < n
    assert counters.rounds_processed == len(sizes)
