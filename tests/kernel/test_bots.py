"""Other bots: the roster (known, added, detected) and the kernel breaking a bot↔bot exchange."""

from __future__ import annotations

import itertools

import pytest

from runtime.kernel.attention import Decision
from runtime.kernel.bots import BotRoster, BotSettings
from runtime.kernel.errors import InvalidSetting
from runtime.kernel.kernel import IngestAction, Kernel
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings

SELF = "10001"
OTHER_BOT = "20002"
_ids = itertools.count(1)


def msg(text: str, t: float, sender: str, *, addressed: bool = False, chat: str = "1") -> ChatMessage:
    return ChatMessage(
        message_id=f"m{next(_ids)}",
        chat_kind=ChatKind.GROUP,
        chat_ident=chat,
        sender_id=sender,
        sender_name=sender,
        time=t,
        text=text,
        addressed=addressed,
        from_self=sender == SELF,
    )


def kernel(**bots: object) -> Kernel:
    return Kernel(KernelSettings(bots=BotSettings(**bots), self_ids=(SELF,)))  # type: ignore[arg-type]


def ping_pong(k: Kernel, *, rounds: int, latency: float = 0.3) -> list[IngestAction]:
    """A person asks once; then the bot and the other bot answer each other, the other within
    ``latency`` s (it @s the bot each time, so every one of its messages is addressed)."""
    actions = [k.ingest(msg("灰风你好", 0.0, "alice", addressed=True)).action]
    t = 0.0
    for _ in range(rounds):
        t += 5.0
        k.ingest(msg("你好呀", t, SELF))  # the bot's answer, echoed back
        actions.append(k.ingest(msg("@灰风 你好呀", t + latency, OTHER_BOT, addressed=True)).action)
    return actions


def test_the_bots_own_messages_never_raise_attention_even_addressed():
    k = kernel()
    for t in range(20):
        result = k.ingest(msg("@灰风 灰风在吗？", float(t), SELF, addressed=True))
        assert result.action is IngestAction.RECORDED
        assert result.activation is None
    assert k.due(100.0) == []
    assert k.bots.turns("group:1") == 0  # the bot's own messages are no bot turns


def test_a_known_bot_is_answered_at_most_max_turns_times_in_a_row():
    k = kernel(ids=(OTHER_BOT,), max_turns=2)
    actions = ping_pong(k, rounds=6)
    assert actions[0] is IngestAction.ACT_NOW  # the person
    assert actions[1:3] == [IngestAction.ACT_NOW, IngestAction.ACT_NOW]
    assert actions[3:] == [IngestAction.RECORDED] * 4
    assert k.bots.statistics().held_back == 4


def test_a_held_back_bot_message_says_why():
    k = kernel(ids=(OTHER_BOT,), max_turns=0)
    result = k.ingest(msg("@灰风 在吗？", 1.0, OTHER_BOT, addressed=True))
    assert result.action is IngestAction.RECORDED
    assert result.attention.decision is Decision.LOW
    assert result.reason == "bot exchange"
    assert result.event.payload["skip_reason"] == "bot exchange"


def test_a_person_speaking_opens_the_exchange_again():
    k = kernel(ids=(OTHER_BOT,), max_turns=1)
    assert k.ingest(msg("@灰风 一", 1.0, OTHER_BOT, addressed=True)).action is IngestAction.ACT_NOW
    assert k.ingest(msg("@灰风 二", 9.0, OTHER_BOT, addressed=True)).action is IngestAction.RECORDED
    k.ingest(msg("哈哈", 20.0, "alice"))
    assert k.ingest(msg("@灰风 三", 40.0, OTHER_BOT, addressed=True)).action is IngestAction.ACT_NOW


def test_added_ids_count_like_configured_ones():
    k = kernel(max_turns=0)
    assert k.ingest(msg("@灰风 hi", 1.0, OTHER_BOT, addressed=True)).action is IngestAction.ACT_NOW
    k.bots.add_known([int(OTHER_BOT)])
    assert k.bots.is_bot(OTHER_BOT)
    assert k.ingest(msg("@灰风 hi", 9.0, OTHER_BOT, addressed=True)).action is IngestAction.RECORDED


def test_an_account_answering_within_a_second_every_time_is_detected_and_cut_off():
    k = kernel(max_turns=2, detect_runs=4, detect_latency=1.0)
    actions = ping_pong(k, rounds=12)
    assert k.bots.is_bot(OTHER_BOT)
    answered = [a for a in actions[1:] if a is not IngestAction.RECORDED]
    # the fourth fast answer makes it a bot (its first bot turn), a second turn is still answered,
    # everything after is only recorded
    assert len(answered) == 3 + 2
    assert actions[-7:] == [IngestAction.RECORDED] * 7


def test_people_answering_at_human_speed_are_never_bots():
    k = kernel(max_turns=0, detect_runs=4)
    actions = ping_pong(k, rounds=12, latency=3.0)
    assert not k.bots.is_bot(OTHER_BOT)
    assert IngestAction.RECORDED not in actions


def test_one_slow_answer_breaks_a_run_and_slow_runs_undo_the_label():
    roster = BotRoster(BotSettings(detect_runs=3, detect_latency=1.0))
    t = 0.0
    for latency in (0.2, 0.2, 5.0, 0.2, 0.2):  # never three fast ones in a row
        t += 10.0
        roster.note_own("c", t)
        roster.observe("c", "x", t + latency)
    assert not roster.is_bot("x")
    for _ in range(3):
        t += 10.0
        roster.note_own("c", t)
        roster.observe("c", "x", t + 0.2)
    assert roster.is_bot("x")
    for _ in range(3):
        t += 10.0
        roster.observe("c", "x", t)
    assert not roster.is_bot("x")


def test_a_sender_following_itself_is_not_fast():
    roster = BotRoster(BotSettings(detect_runs=3))
    for i in range(10):
        roster.observe("c", "typist", i * 0.1)  # one person's burst of short lines
    assert not roster.is_bot("typist")


def test_tracked_senders_are_bounded():
    roster = BotRoster(BotSettings(detect_runs=2, max_tracked=100))
    for i in range(1_000):
        roster.observe("c", f"u{i}", float(i))
    assert roster.statistics().tracked_senders == 100


def test_bad_settings_are_refused():
    with pytest.raises(InvalidSetting):
        BotSettings(max_turns=-1)
    with pytest.raises(InvalidSetting):
        BotSettings(detect_latency=-0.5)


def test_people_writing_in_a_burst_are_not_taken_for_bots_and_their_at_is_answered():
    # A busy group: three people, every line within a second of the one before. Speed in a burst
    # proves nothing; none of them is a bot, and an @ after thirty such lines is answered.
    k = kernel(max_turns=2, detect_runs=6, detect_latency=1.0)
    for n in range(30):
        k.ingest(msg(f"闲聊第{n}句", 100.0 + n * 0.2, f"p{n % 3}"))
    assert k.bots.detected() == frozenset()
    assert k.ingest(msg("@灰风 在吗", 106.1, "p1", addressed=True)).action is IngestAction.ACT_NOW


def test_a_detected_bot_is_not_held_back_where_the_bot_has_not_spoken():
    # An account answering a person within a second, again and again, is taken for a bot; while
    # the bot itself keeps out of the chat, there is no exchange of its to break.
    k = kernel(max_turns=1, detect_runs=3, detect_latency=1.0)
    t = 0.0
    for _ in range(8):
        t += 10.0
        k.ingest(msg("有人吗", t, "alice"))
        k.ingest(msg("自动回复：我在", t + 0.2, OTHER_BOT))
    assert k.bots.is_bot(OTHER_BOT)
    assert k.ingest(msg("@灰风 帮我看看", t + 0.4, OTHER_BOT, addressed=True)).action is IngestAction.ACT_NOW
