"""A simulated week of proactive speech on a virtual clock: the bot speaks into a silent group only
with something to say (here: a question put to it that it never answered), never in the quiet hours,
and says truthfully when a tick had nothing to say."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from runtime.extensions import LifeContext, LifeSourceSpec, Proposal
from tests.app.conftest import FakeClock, Harness, make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

ZONE = ZoneInfo("Asia/Shanghai")
LIVELY, ASKING, SILENT = "group:500", "group:600", "group:700"
TICK = 600.0  # a tick every ten minutes of the simulated week
FOLLOW_UP_AFTER_H = 2
FOLLOW_UP = "刚才的问题：明天应该不会下雨"


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def local(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, ZONE)


def in_quiet_hours(ts: float) -> bool:
    hour = local(ts).hour
    return hour >= 23 or hour < 8


def week_config(server: ScriptedOpenAIServer):  # type: ignore[no-untyped-def]
    return make_config(
        server,
        life={
            "enabled": True,
            "quiet_hours": "23:00-08:00",
            "timezone": "Asia/Shanghai",
            "follow_up_after_ms": FOLLOW_UP_AFTER_H * 3_600_000,
        },
    )


def register_noise(h: Harness) -> None:
    """Two sources with nothing worth saying: one proposes every tick with no reason at all, the
    other a reason but no grounds, for a group nobody has spoken in since the first day."""
    core = h.runtime.bot.core

    def chatter(context: LifeContext) -> list[Proposal]:
        return [Proposal(chat, "") for chat in (LIVELY, ASKING, SILENT)]

    def weather(context: LifeContext) -> list[Proposal]:
        return [Proposal(SILENT, "今天天气不错，聊聊天吧")]

    core.extensions.register_life_source(
        core.scope.child("chatter"), LifeSourceSpec("chatter", chatter, TICK)
    )
    core.extensions.register_life_source(
        core.scope.child("weather"), LifeSourceSpec("weather", weather, TICK)
    )


async def test_a_week_of_proactive_speech_speaks_only_with_grounds_and_never_in_quiet_hours(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load(
        {
            "rules": [{"when": {"contains": "还没有回答"}, "reply": call("reply", text=FOLLOW_UP)}],
            # an addressed question: the bot chose to stay silent, so the question stays open
            "default": call("observe", reason="先不说"),
        }
    )
    # Start at local midnight, so the week's days line up with the clock.
    start = datetime(2026, 3, 2, 0, 0, tzinfo=ZONE).timestamp()
    clock = FakeClock(start)
    ask_times: list[float] = []
    async with running(week_config(openai_server), data_dir, clock=clock) as h:
        register_noise(h)
        await h.say("大家好", chat=SILENT, sender="77")  # the only message SILENT ever gets
        director = h.runtime.bot.core.director
        slots = int(7 * 86_400 / TICK)
        for slot in range(slots):
            now = local(h.clock())
            minute = now.hour * 60 + now.minute
            if 9 * 60 <= minute <= 22 * 60 + 30 and minute % 30 == 0:
                await h.say(f"随便聊聊 {slot}", chat=LIVELY, sender=str(100 + slot % 3))
            # a question to the bot each evening; on the fourth day at 22:30, so its follow-up falls
            # into the quiet hours and has to wait for the morning
            day = (now.date() - local(start).date()).days
            ask_at = 22 * 60 + 30 if day == 3 else 20 * 60
            if minute == ask_at:
                await h.say("灰风，明天会下雨吗？", chat=ASKING, sender="42", addressed=True)
                ask_times.append(h.clock())
            await h.runtime.maintenance.life()
            await h.advance(TICK, step=TICK)

        sent = h.outbound.sent
        follow_ups = [s for s in sent if s.text == FOLLOW_UP]
        # with grounds: every unanswered question was followed up once, in the group that asked
        assert len(ask_times) == 7
        assert len(follow_ups) == 7
        assert {s.chat_id for s in follow_ups} == {ASKING}
        # without: nothing at all (no reason, or a reason but no grounds for a silent group)
        assert [s for s in sent if s.text != FOLLOW_UP] == []
        # never in the quiet hours; the late question's answer waited for 08:00
        assert not [s for s in sent if in_quiet_hours(s.time)]
        late = next(s for s in follow_ups if s.time > ask_times[3])
        assert local(late.time).hour == 8
        assert late.time - ask_times[3] < 10 * 3_600
        for asked, answer in zip(ask_times[:3], follow_ups[:3], strict=True):
            assert answer.time - asked == pytest.approx(FOLLOW_UP_AFTER_H * 3_600, abs=TICK)
        stats = director.statistics()
        assert stats.spoke == 7
        assert stats.suppressed_no_reason > 0
        assert stats.suppressed_inactive > 0

        # What the last tick says, truthfully: the lively group had nothing to say, and /why says so.
        report = await director.tick(h.clock())
        assert report.emitted == ()
        silent = dict(report.silent)
        assert silent[LIVELY] == "nothing to say"
        why = await h.runtime.control.why(LIVELY, None)
        assert "没有开口——没什么可说" in why
        # the group a follow-up was sent to: the latest word is that it spoke, and about what
        asking = director.note(ASKING)
        assert asking is not None
        if asking.spoke:  # (a later tick may have noted silence since)
            assert "问你的问题还没有回答" in asking.reason


async def test_a_tick_with_nothing_to_say_stays_silent_and_says_so(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    config = make_config(openai_server, life={"enabled": True, "quiet_hours": ""})
    async with running(config, data_dir) as h:
        await h.say("下午好", chat=LIVELY)
        report = await h.runtime.bot.core.director.tick(h.clock())
        await h.advance(60)
        assert report.emitted == ()
        assert dict(report.silent) == {LIVELY: "nothing to say"}
        assert h.outbound.sent == []
        why = await h.runtime.control.why(LIVELY, None)
        assert "主动发言" in why
        assert "没有开口——没什么可说" in why
    assert openai_server.chat_requests == []


async def test_a_proactive_episode_that_stays_silent_is_reported_as_not_spoken(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": call("observe", reason="大家在忙")})
    config = make_config(openai_server, life={"enabled": True, "quiet_hours": ""})
    async with running(config, data_dir) as h:
        core = h.runtime.bot.core

        def festival(context: LifeContext) -> list[Proposal]:
            return [Proposal(LIVELY, "今天是冬至")]

        core.extensions.register_life_source(
            core.scope.child("festival"), LifeSourceSpec("festival", festival, 86_400)
        )
        await h.say("下午好", chat=LIVELY)
        report = await core.director.tick(h.clock())
        assert len(report.emitted) == 1
        assert "已排期" in await h.runtime.control.why(LIVELY, None)
        await h.advance(30)
        assert h.outbound.sent == []
        note = core.director.note(LIVELY)
        assert note is not None
        assert note.spoke is False
        why = await h.runtime.control.why(LIVELY, None)
        assert "没有开口" in why
        assert "大家在忙" in why
        assert core.director.statistics().stayed_silent == 1


async def test_a_question_the_bot_answered_is_not_followed_up(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": call("reply", text="不会下雨")})
    clock = FakeClock(datetime(2026, 3, 2, 10, 0, tzinfo=ZONE).timestamp())
    async with running(week_config(openai_server), data_dir, clock=clock) as h:
        await h.say("灰风，明天会下雨吗？", chat=ASKING, addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["不会下雨"]
        for _ in range(int(6 * 3_600 / TICK)):
            await h.runtime.maintenance.life()
            await h.advance(TICK, step=TICK)
        assert h.outbound.texts() == ["不会下雨"]
    assert len(openai_server.chat_requests) == 1
