"""The deliberation protocol: begin, recheck the budget, speak, finish exactly once — in that order."""

from __future__ import annotations

import pytest

from runtime.kernel.budget import BudgetPolicy
from runtime.kernel.deliberation import Deliberation, Recheck, Stage
from runtime.kernel.errors import IllegalTransition, InvalidSetting, KernelError
from runtime.kernel.events import EventState
from runtime.kernel.kernel import ActivationOutcome, IngestAction, Kernel
from runtime.kernel.message import ChatKind, ChatMessage
from tests.kernel.test_kernel import BOT, make, msg


def at(text: str, t: float, **kwargs: object) -> ChatMessage:
    return msg(text, t, addressed=True, mentions=(BOT,), **kwargs)  # type: ignore[arg-type]


def sent(reply_to: str | None, t: float, message_id: str) -> ChatMessage:
    return ChatMessage(
        message_id, ChatKind.GROUP, "1", BOT, "灰风", t, "好的", reply_to=reply_to, from_self=True
    )


def begun_at(kernel: Kernel, text: str, t: float) -> tuple[ChatMessage, Deliberation]:
    message = at(text, t)
    result = kernel.ingest(message)
    assert result.activation is not None
    return message, kernel.deliberate(result.activation, t)


def test_an_at_comes_with_its_ready_activation_carrying_the_message() -> None:
    kernel = make()
    message = at("灰风 在吗", 100.0)
    result = kernel.ingest(message)
    assert result.action is IngestAction.ACT_NOW
    activation = result.activation
    assert activation is not None
    assert activation.ready
    assert activation.event is result.event
    assert activation.trigger == message


def test_a_scheduled_activation_brings_its_message_when_it_falls_due() -> None:
    kernel = make()
    message = msg("有人知道原神的猫粮活动吗？", 100.0)
    result = kernel.ingest(message)
    assert result.action is IngestAction.SCHEDULED
    assert result.activation is None
    [activation] = kernel.due(result.activate_at or 0.0)
    assert activation.ready
    assert activation.trigger == message


def test_the_whole_sequence_spends_the_budget_and_joins_the_reply_to_the_thread() -> None:
    kernel = make()
    message = at("灰风 在吗", 100.0)
    result = kernel.ingest(message)
    assert result.activation is not None
    d = kernel.deliberate(result.activation, 100.0)
    assert d.stage is Stage.BEGUN
    assert d.forced
    assert d.trigger == message
    assert d.event.state is EventState.DELIBERATING
    assert d.recheck(101.0).proceed
    d.spoke(102.0, sent=(sent(message.message_id, 102.0, "r1"),))
    done = d.finish(102.0, EventState.REPLIED)
    assert done.state is EventState.REPLIED
    assert d.finished
    assert d.outcome is EventState.REPLIED
    actor = kernel.budgets.get("group:1")
    assert actor is not None
    assert actor.last_speech_at == 102.0
    assert kernel.budgets.statistics().forced_speeches == 1
    assert kernel.threads.thread_of("group:1", "r1") == result.thread.thread.id


@pytest.mark.parametrize(
    "steps",
    [
        ("spoke",),  # speech before the budget was asked again
        ("replied",),  # replied without having spoken
        ("recheck", "replied"),
        ("recheck", "recheck"),
        ("recheck", "spoke", "spoke"),
        ("recheck", "spoke", "replied", "skipped"),  # a second finish
        ("skipped", "skipped"),
        ("skipped", "recheck"),
        ("skipped", "spoke"),
    ],
)
def test_steps_out_of_order_are_refused(steps: tuple[str, ...]) -> None:
    kernel = make()
    _, d = begun_at(kernel, "灰风 在吗", 100.0)
    actions = {
        "recheck": lambda: d.recheck(100.0),
        "spoke": lambda: d.spoke(100.0),
        "replied": lambda: d.finish(100.0, EventState.REPLIED),
        "skipped": lambda: d.finish(100.0, EventState.SKIPPED, reason="no"),
    }
    *legal, last = steps
    for step in legal:
        actions[step]()
    state_before = kernel.events.require(d.event.id).state
    with pytest.raises(IllegalTransition):
        actions[last]()
    assert kernel.events.require(d.event.id).state is state_before


def test_a_refused_finish_leaves_the_deliberation_open() -> None:
    kernel = make()
    _, d = begun_at(kernel, "灰风 在吗", 100.0)
    with pytest.raises(InvalidSetting):
        d.finish(100.0, EventState.SNOOZED)
    with pytest.raises(InvalidSetting):
        d.finish(100.0, EventState.DELIBERATING)
    assert not d.finished
    assert d.finish(100.0, EventState.SKIPPED, reason="gate muted").state is EventState.SKIPPED


def test_only_ready_activations_that_are_still_eligible_can_be_begun() -> None:
    kernel = make()
    message = msg("有人知道原神的猫粮活动吗？", 100.0)
    result = kernel.ingest(message)
    [activation] = kernel.due(result.activate_at or 0.0)
    kernel.deliberate(activation, 103.0)
    with pytest.raises(KernelError):  # begun already: one deliberation per activation
        kernel.deliberate(activation, 103.0)
    expired = kernel.ingest(msg("原神的猫粮还有吗？", 200.0, chat="2"))
    [report] = kernel.due(10_000.0)
    assert report.event.id == expired.event.id
    assert report.outcome is ActivationOutcome.EXPIRED
    with pytest.raises(IllegalTransition):
        kernel.deliberate(report, 10_000.0)


def test_a_burst_of_ats_is_snoozed_behind_the_first_reply() -> None:
    """Both @s pass on arrival; asked again once the chat is held, the second sees the first's speech."""
    kernel = make()
    _first, d1 = begun_at(kernel, "灰风 在吗", 100.0)
    second = kernel.ingest(at("灰风 还有我", 100.5))
    assert second.action is IngestAction.ACT_NOW
    assert second.activation is not None
    assert d1.recheck(101.0).proceed
    d1.spoke(101.0)
    d1.finish(101.0, EventState.REPLIED)

    d2 = kernel.deliberate(second.activation, 101.5)
    check = d2.recheck(101.5)
    assert check.verdict is Recheck.SNOOZE
    assert not check.proceed
    assert check.until == 101.0 + kernel.settings.forced_budget.min_interval
    assert d2.finished
    assert d2.outcome is EventState.SNOOZED
    assert d2.event.state is EventState.SNOOZED
    assert d2.event.not_before == check.until
    [back] = kernel.due(check.until)
    assert back.ready
    assert back.event.id == second.event.id
    assert back.trigger == second.message  # the message is still known when it comes back


def test_a_recheck_past_the_deadline_skips_with_the_budget_s_reason() -> None:
    kernel = make(forced_budget=BudgetPolicy(min_interval=500.0, max_per_window=20, window=600.0))
    _, d1 = begun_at(kernel, "灰风 在吗", 100.0)
    second = kernel.ingest(at("灰风 还有我", 100.5))
    assert second.activation is not None
    d1.recheck(101.0)
    d1.spoke(101.0)
    d1.finish(101.0, EventState.REPLIED)
    d2 = kernel.deliberate(second.activation, 102.0)
    check = d2.recheck(102.0)  # retry at 601, the forced deadline is 100.5 + 120
    assert check.verdict is Recheck.SKIP
    assert check.until is None
    assert check.reason.startswith("budget: forced cooldown")
    assert d2.event.state is EventState.SKIPPED
    assert d2.event.payload["skip_reason"] == check.reason
    assert kernel.due(1_000.0) == []


def test_a_finish_after_prune_closed_the_event_is_still_the_one_finish() -> None:
    kernel = make()
    _, d = begun_at(kernel, "灰风 在吗", 100.0)
    kernel.prune(100.0 + kernel.settings.scheduling.deliberation_timeout + 1)
    assert d.finish(500.0, EventState.SKIPPED, reason="late").state is EventState.EXPIRED
    with pytest.raises(IllegalTransition):
        d.finish(500.0, EventState.SKIPPED)


def test_the_kernel_lets_go_of_messages_nobody_will_answer() -> None:
    """Messages kept for their activations go with them (finished, superseded, expired, withdrawn)."""
    kernel = make()
    _, d = begun_at(kernel, "灰风 在吗", 100.0)
    d.recheck(100.0)
    d.spoke(100.0)
    d.finish(100.0, EventState.REPLIED)
    kernel.ingest(msg("有人知道原神的猫粮活动吗？", 200.0, chat="2"))
    kernel.ingest(msg("原神的猫粮还有吗？", 201.0, chat="2"))  # supersedes the first
    cancelled = kernel.ingest(msg("原神的猫粮在哪买？", 202.0, chat="3"))
    kernel.cancel(cancelled.event.id, 203.0, reason="recalled")
    kernel.due(10_000.0)  # the superseded report, the second expired
    assert kernel._triggers == {}
