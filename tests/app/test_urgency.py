"""Addressed work: marked from a forced episode's start to its first model call, never for long."""

from __future__ import annotations

from runtime.urgency import HOLD_LIMIT, AddressedWork, addressed, reaching_the_model


def test_a_mark_is_pending_until_the_model_is_called_or_the_block_ends() -> None:
    work = AddressedWork()
    assert not work.pending()
    with addressed(work):
        assert work.pending()
        reaching_the_model()
        assert not work.pending(), "calling the model ends the mark"
    with addressed(work):
        assert work.pending()
    assert not work.pending(), "the end of the episode ends it too"
    reaching_the_model()  # outside any mark: nothing happens
    with addressed(None):
        assert not work.pending()


def test_a_mark_holds_for_a_limited_time_only() -> None:
    now = [100.0]
    work = AddressedWork(clock=lambda: now[0])
    with addressed(work):
        now[0] += HOLD_LIMIT / 2
        assert work.pending()
        now[0] += HOLD_LIMIT
        assert not work.pending(), "a slow build does not hold chatter back for long"
        assert len(work) == 0
