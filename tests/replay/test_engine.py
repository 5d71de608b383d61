"""ReplayEngine in process: activations fire at their own times, would-speak is charged like a reply."""

from __future__ import annotations

import pytest

from runtime.kernel.budget import BudgetPolicy
from runtime.kernel.message import ChatKind, ChatMessage
from runtime.kernel.settings import KernelSettings
from runtime.replay.addressing import Addressing, opens_with_name
from runtime.replay.engine import ActivationLine, MessageLine, Outcome, ReplayEngine
from runtime.replay.reader import SourceMessage, read_log

T0 = 1767225600.0
SETTINGS = KernelSettings(
    budget=BudgetPolicy(min_interval=60.0, max_per_window=2, window=1800.0),
    forced_budget=BudgetPolicy(min_interval=3.0, max_per_window=3, window=600.0),
    self_ids=("10000",),
)
RULES = Addressing("10000", ("灰风", "greywind"))


def source(
    mid: int, at: float, text: str, *, sender: str = "7", group: str = "1", addressed: bool = False
) -> SourceMessage:
    message = ChatMessage(
        message_id=str(mid),
        chat_kind=ChatKind.GROUP,
        chat_ident=group,
        sender_id=sender,
        sender_name=f"群友{sender}",
        time=T0 + at,
        text=text,
        mentions=("10000",) if addressed else (),
        addressed=addressed,
    )
    return SourceMessage(message, mid, int(group), None)


def replay(engine: ReplayEngine, sources: list[SourceMessage]) -> list[MessageLine | ActivationLine]:
    out: list[MessageLine | ActivationLine] = []
    for s in sources:
        line, settled = engine.ingest(s)
        out.append(line)
        out.extend(settled)
    out.extend(engine.finish())
    return out


def test_an_activation_fires_at_its_own_time_not_when_the_next_message_comes() -> None:
    engine = ReplayEngine(SETTINGS, start=T0)
    first = source(1, 0, "你们说灰风读过三体吗？")
    line, settled = engine.ingest(first)
    assert (line.result.decision.value, line.result.action.value, settled) == ("medium", "scheduled", [])
    fired = engine.advance(T0 + 3600)  # the log is silent for an hour
    assert [(a.outcome, a.time) for a in fired] == [(Outcome.WOULD_SPEAK, T0 + 10)]
    assert engine.now() == T0 + 3600


def test_finish_drains_what_the_log_left_pending() -> None:
    engine = ReplayEngine(SETTINGS, start=T0)
    engine.ingest(source(1, 0, "你们说灰风读过三体吗？"))
    [last] = engine.finish()
    assert (last.outcome, last.time) == (Outcome.WOULD_SPEAK, T0 + 10)
    assert engine.kernel.scheduler.next_at() is None


def test_would_speak_spends_the_budget_like_a_reply() -> None:
    engine = ReplayEngine(SETTINGS, start=T0)
    lines = replay(
        engine,
        [source(1, 0, "灰风 在吗", addressed=True), source(2, 1, "灰风 说话呀", sender="8", addressed=True)],
    )
    _, spoken, second, delayed = lines
    assert isinstance(spoken, ActivationLine)
    assert (spoken.outcome, spoken.time) == (Outcome.WOULD_SPEAK, T0)
    # The first reply spent the forced budget: its 3 s cooldown delays the second one to T0 + 3.
    assert isinstance(second, MessageLine)
    assert second.result.action.value == "scheduled"
    assert isinstance(delayed, ActivationLine)
    assert (delayed.outcome, delayed.time, delayed.event.id) == (
        Outcome.WOULD_SPEAK,
        T0 + 3,
        second.result.event.id,
    )
    stats = engine.statistics()
    assert dict(stats.activations) == {"would_speak": 2}
    assert stats.messages == 2


def test_a_message_from_the_past_is_refused() -> None:
    engine = ReplayEngine(SETTINGS, start=T0)
    engine.ingest(source(1, 10, "早"))
    with pytest.raises(ValueError, match="before"):
        engine.ingest(source(2, 5, "早啊"))


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("灰风在吗", "灰风"),
        ("  灰风，帮个忙", "灰风"),
        ("GreyWind: hi", "greywind"),
        ("greywind", "greywind"),
        ("greywinds are blowing", None),
        ("我觉得灰风说得对", None),
    ],
)
def test_the_persona_name_opening_a_message_addresses_the_bot(text: str, name: str | None) -> None:
    assert opens_with_name(text, ("灰风", "greywind")) == name


def test_addressing_from_a_log() -> None:
    lines = [
        '{"ts": 1.0, "group_id": 5, "user_id": 10000, "message_id": 1, "text": "我是灰风"}',
        '{"ts": 2.0, "group_id": 5, "user_id": 2, "message_id": 2, "text": "好的", "reply_to": 1}',
        '{"ts": 3.0, "group_id": 5, "user_id": 3, "message_id": 3, "text": "嗯", "reply_to": 2}',
        '{"ts": 4.0, "group_id": 5, "user_id": 3, "message_id": 4, "text": "你看", "at": [2]}',
        '{"ts": 5.0, "group_id": 5, "user_id": 3, "message_id": 5, "text": "你看", "at": [2, 10000]}',
        '{"ts": 6.0, "group_id": null, "user_id": 3, "message_id": 6, "text": "嗯"}',
        '{"ts": 7.0, "group_id": 6, "user_id": 3, "message_id": 7, "text": "回复", "reply_to": 1}',
    ]
    messages, problems = read_log(lines, RULES)
    assert problems == []
    assert [(m.ref, m.how_addressed, m.message.addressed) for m in messages] == [
        (1, "", False),  # the bot's own message
        (2, "reply", True),
        (3, "", False),  # a reply to a person
        (4, "", False),  # an @ of someone else
        (5, "mention", True),
        (6, "private", True),
        (7, "", False),  # message 1 of another group is not the bot's
    ]
    assert messages[0].message.from_self
    assert messages[5].message.chat_id == "private:3"
    assert messages[5].group is None
