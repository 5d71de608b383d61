"""The Kernel facade: what the bot does with each message, and what comes due later."""

from __future__ import annotations

import itertools

import pytest

from runtime.kernel.attention import Decision
from runtime.kernel.budget import BudgetPolicy
from runtime.kernel.errors import IllegalTransition, InvalidSetting
from runtime.kernel.events import EventState
from runtime.kernel.kernel import ActivationOutcome, IngestAction, Kernel
from runtime.kernel.lexicon.learning import WhitespaceSegmenter
from runtime.kernel.lexicon.terms import LexiconKey, LexiconScope
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings, SchedulingSettings, Supersede

BOT = "10001"
_ids = itertools.count(1)


def msg(
    text: str,
    t: float,
    *,
    chat: str = "1",
    sender: str = "alice",
    addressed: bool = False,
    reply_to: str | None = None,
    mentions: tuple[str, ...] = (),
    private: bool = False,
    message_id: str | None = None,
) -> ChatMessage:
    return ChatMessage(
        message_id=message_id or f"m{next(_ids)}",
        chat_kind=ChatKind.PRIVATE if private else ChatKind.GROUP,
        chat_ident=chat,
        sender_id=sender,
        sender_name=sender,
        time=t,
        text=text,
        mentions=mentions,
        reply_to=reply_to,
        addressed=addressed,
    )


def own(text: str, t: float, *, chat: str = "1", reply_to: str | None = None) -> ChatMessage:
    return ChatMessage(
        f"b{next(_ids)}", ChatKind.GROUP, chat, BOT, "灰风", t, text, reply_to=reply_to, from_self=True
    )


def make(**overrides: object) -> Kernel:
    settings = KernelSettings(self_ids=(BOT,), lexicon_terms=("猫粮", "原神"), **overrides)  # type: ignore[arg-type]
    return Kernel(settings, segmenter=WhitespaceSegmenter())


# -- ingest decisions ---------------------------------------------------------------------------


def test_chatter_is_recorded_and_never_activates() -> None:
    kernel = make()
    result = kernel.ingest(msg("哈哈哈哈 好的", 100.0))
    assert result.action is IngestAction.RECORDED
    assert result.decision is Decision.LOW
    assert result.event.state is EventState.SKIPPED
    assert result.activate_at is None
    assert kernel.due(10_000.0) == []


def test_an_at_is_answered_at_once() -> None:
    kernel = make()
    result = kernel.ingest(msg("@灰风 帮我看看这个", 100.0, addressed=True, mentions=(BOT,)))
    assert result.action is IngestAction.ACT_NOW
    assert result.decision is Decision.FORCED
    assert result.activate_at == 100.0
    assert result.event.state is EventState.ELIGIBLE
    assert result.event.payload["forced"] is True
    kernel.begin(result.event.id, 100.5)
    done = kernel.finish(result.event.id, 102.0, "replied")
    assert done.state is EventState.REPLIED


def test_private_messages_are_forced() -> None:
    result = make().ingest(msg("在吗", 5.0, private=True, chat="42", sender="42"))
    assert result.action is IngestAction.ACT_NOW
    assert result.event.chat_id == "private:42"


def test_forced_reply_over_budget_waits_for_retry_then_is_dropped_past_the_deadline() -> None:
    kernel = make(
        forced_budget=BudgetPolicy(min_interval=5.0, max_per_window=2, window=600.0),
        scheduling=SchedulingSettings(forced_deadline=30.0),
    )
    kernel.record_speech("group:1", 100.0, forced=True)
    delayed = kernel.ingest(msg("@灰风 再说一遍", 101.0, addressed=True))
    assert delayed.action is IngestAction.SCHEDULED
    assert delayed.activate_at == 105.0
    assert "cooldown" in delayed.reason
    assert kernel.due(104.0) == []
    ready = kernel.due(105.0)
    assert [(a.event.id, a.outcome) for a in ready] == [(delayed.event.id, ActivationOutcome.READY)]
    kernel.record_speech("group:1", 105.0, forced=True)
    # Window of 2 per 600 s now full until 700: beyond the 30 s deadline, so the reply is dropped.
    dropped = kernel.ingest(msg("@灰风 ???", 110.0, addressed=True, sender="bob"))
    assert dropped.action is IngestAction.RECORDED
    assert dropped.event.state is EventState.SKIPPED
    assert "window full" in str(dropped.event.payload["skip_reason"])


def test_high_attention_is_scheduled_after_the_delay_and_comes_due() -> None:
    kernel = make()
    result = kernel.ingest(msg("灰风觉得猫粮哪个牌子好？", 100.0))
    assert result.decision is Decision.HIGH
    assert result.action is IngestAction.SCHEDULED
    assert result.activate_at == 102.0
    assert result.event.deadline == 160.0
    assert "direct +0.45" in result.attention.reasons
    assert any(r.startswith("keyword 猫粮") for r in result.attention.reasons)
    assert kernel.due(101.9) == []
    (activation,) = kernel.due(102.0)
    assert activation.ready
    assert activation.event.state is EventState.ELIGIBLE


def test_medium_attention_waits_longer() -> None:
    kernel = make()
    result = kernel.ingest(msg("猫粮是不是涨价了？", 100.0))
    assert result.decision is Decision.MEDIUM
    assert result.activate_at == 110.0
    assert result.event.deadline == 220.0


def test_keyword_only_message_is_never_forced() -> None:
    kernel = make()
    result = kernel.ingest(msg("原神 原神 原神 猫粮 猫粮", 100.0))
    assert result.decision in (Decision.MEDIUM, Decision.LOW)
    assert {h.term for h in result.keyword_hits} == {"原神", "猫粮"}


def test_persona_name_in_the_middle_is_direct_not_forced() -> None:
    result = make().ingest(msg("要不问问灰风吧", 100.0))
    assert result.decision is not Decision.FORCED
    assert "direct +0.45" in result.attention.reasons
    # The persona's name is not counted again as a topical keyword.
    assert not any(r.startswith("keyword") for r in result.attention.reasons)


# -- supersede ----------------------------------------------------------------------------------


def test_newer_message_in_the_same_thread_supersedes_the_pending_one() -> None:
    kernel = make()
    first = kernel.ingest(msg("灰风 猫粮推荐一下？", 100.0))
    second = kernel.ingest(msg("灰风 还有原神那个呢？", 101.0))
    assert first.thread.thread.id == second.thread.thread.id
    assert second.superseded == (first.event.id,)
    old = kernel.events.require(first.event.id)
    assert old.state is EventState.SKIPPED
    assert old.payload["skip_reason"] == f"superseded by {second.event.id}"
    out = kernel.due(150.0)
    outcomes = [(a.event.id, a.outcome) for a in out]
    assert (first.event.id, ActivationOutcome.SUPERSEDED) in outcomes
    assert (second.event.id, ActivationOutcome.READY) in outcomes
    assert all(a.outcome is not ActivationOutcome.SUPERSEDED for a in kernel.due(300.0))


def test_an_at_supersedes_the_pending_activation_of_its_thread() -> None:
    kernel = make()
    pending = kernel.ingest(msg("灰风 猫粮推荐一下？", 100.0))
    forced = kernel.ingest(msg("@灰风 快说", 101.0, addressed=True))
    assert forced.superseded == (pending.event.id,)


def test_other_chats_and_threads_keep_their_activations() -> None:
    kernel = make()
    a = kernel.ingest(msg("灰风 猫粮推荐一下？", 100.0, chat="1"))
    b = kernel.ingest(msg("灰风 猫粮推荐一下？", 100.5, chat="2"))
    assert b.superseded == ()
    ready = {x.event.id for x in kernel.due(150.0) if x.ready}
    assert ready == {a.event.id, b.event.id}


def test_supersede_policy_none_keeps_every_activation() -> None:
    kernel = make(scheduling=SchedulingSettings(supersede=Supersede.NONE))
    kernel.ingest(msg("灰风 猫粮推荐一下？", 100.0))
    second = kernel.ingest(msg("灰风 还有原神那个呢？", 101.0))
    assert second.superseded == ()
    assert len(kernel.scheduler) == 2


# -- due: budgets, deadlines, one voice ---------------------------------------------------------


def test_budget_blocked_activation_is_rescheduled_within_its_deadline() -> None:
    kernel = make(budget=BudgetPolicy(min_interval=20.0, max_per_window=4, window=1800.0))
    result = kernel.ingest(msg("灰风 猫粮推荐一下？", 100.0))
    kernel.record_speech("group:1", 95.0)
    assert kernel.due(102.0) == []  # blocked until 115, deadline 160: rescheduled, not reported
    assert kernel.scheduler.next_at() == 115.0
    assert kernel.statistics().rescheduled_by_budget == 1
    (activation,) = kernel.due(115.0)
    assert activation.event.id == result.event.id
    assert activation.ready


def test_budget_blocked_past_the_deadline_is_dropped_with_the_reason() -> None:
    kernel = make(budget=BudgetPolicy(min_interval=300.0, max_per_window=4, window=1800.0))
    result = kernel.ingest(msg("灰风 猫粮推荐一下？", 100.0))
    kernel.record_speech("group:1", 101.0)  # the bot spoke elsewhere in the chat meanwhile
    (activation,) = kernel.due(102.0)
    assert activation.outcome is ActivationOutcome.BUDGET_BLOCKED
    assert activation.event.id == result.event.id
    assert activation.event.state is EventState.SKIPPED
    assert "cooldown" in activation.reason


def test_expired_activation_is_reported_once() -> None:
    kernel = make()
    result = kernel.ingest(msg("灰风 猫粮推荐一下？", 100.0))
    out = kernel.due(1_000.0)
    assert [(a.event.id, a.outcome) for a in out] == [(result.event.id, ActivationOutcome.EXPIRED)]
    assert out[0].event.state is EventState.EXPIRED
    assert kernel.due(2_000.0) == []


def test_one_voice_per_chat_per_batch() -> None:
    kernel = make()
    kernel.schedule_activation("wait", "group:1", now=0.0, not_before=10.0, deadline=500.0)
    kernel.schedule_activation("life", "group:1", now=0.0, not_before=10.0, deadline=500.0)
    kernel.schedule_activation("life", "group:2", now=0.0, not_before=10.0)
    out = kernel.due(10.0)
    assert sorted(a.event.chat_id for a in out if a.ready) == ["group:1", "group:2"]
    # The second activation of group:1 waits the normal cooldown the first one may spend.
    assert kernel.scheduler.next_at() == 100.0


def test_a_deliberating_chat_holds_back_its_spontaneous_activations() -> None:
    kernel = make()
    asked = kernel.ingest(msg("@灰风 你好", 0.0, addressed=True))
    kernel.begin(asked.event.id, 0.0)
    kernel.schedule_activation("life", "group:1", now=0.0, not_before=5.0, deadline=1_000.0)
    assert kernel.due(5.0) == []
    kernel.finish(asked.event.id, 6.0, "skipped", reason="nothing to say")
    assert [a.ready for a in kernel.due(95.0)] == [True]


# -- schedule_activation, cancel, snooze ---------------------------------------------------------


def test_scheduled_activation_comes_back_and_is_not_superseded_by_messages() -> None:
    kernel = make()
    wait = kernel.schedule_activation(
        "wait", "group:1", now=100.0, not_before=130.0, deadline=200.0, payload={"why": "follow up"}
    )
    assert wait.state is EventState.SCHEDULED
    kernel.ingest(msg("灰风 猫粮推荐一下？", 101.0))
    kernel.due(103.0)  # the message's activation
    kernel.record_speech("group:1", 10.0)
    (activation,) = kernel.due(130.0)
    assert activation.event.id == wait.id
    assert activation.event.payload["why"] == "follow up"


def test_forced_payload_uses_the_forced_budget() -> None:
    kernel = make()
    kernel.record_speech("group:1", 100.0)
    reminder = kernel.schedule_activation(
        "reminder", "group:1", now=100.0, not_before=105.0, payload={"forced": True}
    )
    (activation,) = kernel.due(105.0)
    assert activation.event.id == reminder.id
    assert activation.ready


def test_deadline_before_not_before_is_refused() -> None:
    with pytest.raises(InvalidSetting, match="deadline"):
        make().schedule_activation("wait", "group:1", now=0.0, not_before=10.0, deadline=5.0)


def test_cancel_is_the_disposer_of_a_scheduled_activation() -> None:
    kernel = make()
    ev = kernel.schedule_activation("life", "group:1", now=0.0, not_before=10.0)
    assert kernel.cancel(ev.id, 1.0)
    assert not kernel.cancel(ev.id, 1.0)
    assert kernel.events.require(ev.id).state is EventState.SKIPPED
    assert kernel.due(20.0) == []


def test_finish_snoozed_brings_the_event_back_later() -> None:
    kernel = make()
    result = kernel.ingest(msg("@灰风 一会提醒我", 0.0, addressed=True))
    kernel.begin(result.event.id, 0.0)
    snoozed = kernel.finish(result.event.id, 1.0, "snoozed", until=60.0)
    assert snoozed.state is EventState.SNOOZED
    assert kernel.due(59.0) == []
    (activation,) = kernel.due(60.0)
    assert activation.event.id == result.event.id
    assert activation.ready  # forced payload: the forced budget, open


def test_finish_rejects_non_final_outcomes() -> None:
    kernel = make()
    result = kernel.ingest(msg("@灰风 hi", 0.0, addressed=True))
    kernel.begin(result.event.id, 0.0)
    with pytest.raises(InvalidSetting):
        kernel.finish(result.event.id, 1.0, "snoozed")
    with pytest.raises(InvalidSetting):
        kernel.finish(result.event.id, 1.0, "eligible")
    with pytest.raises(IllegalTransition):
        kernel.begin(result.event.id, 1.0)


# -- the bot's own messages and threads ---------------------------------------------------------


def test_the_bots_thread_raises_continuity_and_other_threads_get_the_penalty() -> None:
    kernel = make(scheduling=SchedulingSettings(recently_replied=600.0))
    asked = kernel.ingest(msg("@灰风 猫粮哪家好", 100.0, addressed=True, sender="alice", message_id="q1"))
    reply = own("猫粮的话看成分表", 101.0, reply_to="q1")
    kernel.note_outgoing(reply)
    kernel.record_speech("group:1", 101.0, forced=True)
    follow = kernel.ingest(msg("成分表看哪些", 110.0, sender="alice", reply_to=reply.message_id))
    assert follow.thread.thread.id == asked.thread.thread.id
    assert any(r.startswith("thread +") for r in follow.attention.reasons)
    assert "direct +0.45" in follow.attention.reasons  # a reply into the bot's thread
    assert not any(r.startswith("recently replied") for r in follow.attention.reasons)
    # Past the thread gap a new conversation starts; the bot spoke in the chat 400 s ago.
    elsewhere = kernel.ingest(msg("周末去哪玩", 501.0, sender="carol"))
    assert elsewhere.thread.thread.id != asked.thread.thread.id
    assert "recently replied -0.20" in elsewhere.attention.reasons


def test_own_message_echoed_by_the_edge_is_recorded_in_its_thread() -> None:
    kernel = make()
    kernel.ingest(msg("@灰风 在吗", 0.0, addressed=True, message_id="q9"))
    result = kernel.ingest(own("在的", 1.0, reply_to="q9"))
    assert result.action is IngestAction.RECORDED
    assert result.event.kind == "outgoing"
    assert BOT in result.thread.thread.participants


# -- lexicon learning ---------------------------------------------------------------------------


def test_learning_runs_only_when_asked_and_feeds_the_group_lexicon() -> None:
    kernel = make()
    for i in range(5):
        kernel.ingest(msg("今晚 星露谷 联机 吗", float(i), sender=f"u{i}"))
    key = LexiconKey(LexiconScope.GROUP, "group:1")
    assert kernel.lexicon.get(key, "星露谷") is None
    assert kernel.statistics().learn_queue == 5
    assert kernel.learn_pending(10.0, max_texts=3) == 3
    assert kernel.learn_pending(10.0) == 2
    assert kernel.learn_pending(10.0) == 0
    term = kernel.lexicon.get(key, "星露谷")
    assert term is not None
    assert term.weight > 0.2  # reinforced by the repeats
    later = kernel.ingest(msg("星露谷 更新了", 20.0))
    assert any(h.term == "星露谷" for h in later.keyword_hits)


def test_learning_queue_is_bounded() -> None:
    kernel = make(scheduling=SchedulingSettings(learn_queue_max=3))
    for i in range(10):
        kernel.ingest(msg(f"消息 {i}", float(i)))
    stats = kernel.statistics()
    assert stats.learn_queue == 3
    assert stats.learn_dropped == 7


def test_names_and_config_terms_are_pinned_at_start() -> None:
    kernel = make()
    persona = kernel.lexicon.terms(LexiconKey(LexiconScope.PERSONA, "self"))
    assert [t.text for t in persona] == ["灰风"]
    assert "greywind" in persona[0].aliases
    kernel.lexicon.decay(10**9)
    assert kernel.lexicon.get(LexiconKey(LexiconScope.GLOBAL, ""), "猫粮") is not None


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x00",
        "灰\u200b风 在吗",
        "🐱🐱🐱 猫粮 🐈‍⬛",
        "\U0001f600" * 1000,
        "猫" * 200_000,
        "a?" * 100_000,
        "猫粮" * 100_000 + "🐱" * 1000,
    ],
)
def test_bad_input_never_raises(text: str) -> None:
    kernel = make()
    result = kernel.ingest(msg(text, 1.0))
    assert result.event.chat_id == "group:1"
    kernel.learn_pending(2.0)


def test_zero_width_characters_do_not_hide_the_name() -> None:
    result = make().ingest(msg("问问灰\u200b风吧", 1.0))
    assert "direct +0.45" in result.attention.reasons


# -- persistence --------------------------------------------------------------------------------


def test_restore_events_brings_pending_activations_back() -> None:
    before = make()
    waiting = before.ingest(msg("灰风 猫粮推荐一下？", 100.0))
    asked = before.ingest(msg("@灰风 在吗", 100.0, chat="2", addressed=True))
    before.begin(asked.event.id, 100.0)
    saved = [before.events.require(waiting.event.id), before.events.require(asked.event.id)]

    after = make()
    assert after.restore_events(saved, now=150.0) == 2
    out = {a.event.id: a for a in after.due(150.0)}
    assert out[waiting.event.id].ready
    assert out[asked.event.id].ready  # interrupted deliberation comes back
    # A restored pending message is still superseded by a newer one.
    again = make(scheduling=SchedulingSettings(supersede=Supersede.CHAT))
    again.restore_events([saved[0]], now=100.5)
    newer = again.ingest(msg("灰风 还有原神呢？", 101.0))
    assert newer.superseded == (waiting.event.id,)


def test_statistics_aggregate_every_component() -> None:
    kernel = make()
    kernel.ingest(msg("哈哈", 0.0))
    kernel.ingest(msg("@灰风 hi", 1.0, addressed=True))
    kernel.ingest(msg("灰风 猫粮推荐一下？", 2.0, chat="2"))
    stats = kernel.statistics()
    assert stats.ingested == 3
    assert dict(stats.by_action) == {"act_now": 1, "scheduled": 1, "recorded": 1}
    assert dict(stats.by_decision)["forced"] == 1
    assert stats.scheduler.pending == 1
    assert stats.events.created == 3
    assert stats.threads.chats == 2
    assert stats.lexicon.pinned >= 3


def test_only_the_head_of_a_huge_message_is_read_for_keywords() -> None:
    kernel = make(read_max_chars=100)
    tail_only = kernel.ingest(msg("嗯" * 500 + "猫粮", 1.0))
    assert tail_only.keyword_hits == ()
    head = kernel.ingest(msg("猫粮" + "嗯" * 500, 2.0, chat="2"))
    assert [h.term for h in head.keyword_hits] == ["猫粮"]


def test_a_deliberation_that_never_finishes_stops_holding_the_chat_back() -> None:
    kernel = make(scheduling=SchedulingSettings(deliberation_timeout=60.0))
    asked = kernel.ingest(msg("@灰风 你好", 0.0, addressed=True))
    kernel.begin(asked.event.id, 0.0)  # the episode dies: finish() never comes
    life = kernel.schedule_activation("life", "group:1", now=0.0, not_before=5.0, deadline=1_000.0)
    assert kernel.due(5.0) == []
    (activation,) = kernel.due(95.0)
    assert activation.event.id == life.id
    assert activation.ready


def test_restore_speeches_puts_the_budgets_back() -> None:
    kernel = make()
    kernel.restore_speeches({"group:1": [(100.0, False)], "group:2": [(100.0, True)]})
    assert not kernel.budgets.can_speak("group:1", 150.0).allowed
    assert kernel.budgets.can_speak("group:2", 150.0, forced=True).allowed
    assert not kernel.budgets.can_speak("group:2", 150.0).allowed  # cooldown after any speech


def test_prune_closes_what_nobody_took_up_and_bounds_the_kernel() -> None:
    kernel = make(scheduling=SchedulingSettings(deliberation_timeout=60.0))
    ignored = kernel.ingest(msg("@灰风 在吗", 0.0, addressed=True))  # act_now, never begun
    died = kernel.ingest(msg("@灰风 帮我查一下", 0.0, addressed=True, chat="2"))
    kernel.begin(died.event.id, 0.0)  # the episode dies
    fresh = kernel.ingest(msg("@灰风 还在吗", 100.0, addressed=True, chat="3"))
    kernel.prune(100.0)
    assert kernel.events.require(ignored.event.id).state is EventState.SKIPPED
    assert kernel.events.require(ignored.event.id).payload["skip_reason"] == "never taken up"
    assert kernel.events.require(died.event.id).state is EventState.EXPIRED
    assert kernel.events.require(fresh.event.id).state is EventState.ELIGIBLE
    # Hours later, finished events and idle threads are gone.
    kernel.prune(100_000.0)
    assert kernel.events.get(ignored.event.id) is None
    assert kernel.statistics().threads.threads == 0


def test_names_too_short_to_match_are_left_out_of_the_lexicon() -> None:
    kernel = Kernel(
        KernelSettings(
            persona_name="灰", persona_aliases=("\u200b风\u200b", "灰风"), lexicon_terms=("猫", " ")
        ),
        segmenter=WhitespaceSegmenter(),
    )
    persona = kernel.lexicon.terms(LexiconKey(LexiconScope.PERSONA, "self"))
    assert [t.text for t in persona] == ["灰风"]
    assert kernel.lexicon.terms(LexiconKey(LexiconScope.GLOBAL, "")) == []


def test_finishing_an_event_prune_already_closed_returns_it_unchanged() -> None:
    kernel = make(scheduling=SchedulingSettings(deliberation_timeout=60.0))
    asked = kernel.ingest(msg("@灰风 查一下", 0.0, addressed=True))
    kernel.begin(asked.event.id, 0.0)
    kernel.prune(100.0)  # the episode took too long
    late = kernel.finish(asked.event.id, 130.0, "replied")
    assert late.state is EventState.EXPIRED
    assert late.updated_at == 100.0
