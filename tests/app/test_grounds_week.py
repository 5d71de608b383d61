"""A simulated week on a virtual clock, through the real runtime, its SQLite store and the scripted
model over HTTP: the bot speaks into a silent group for a follow-up it promised (at its time, after
the quiet hours if it fell in them) and for a remembered day (on that day, after the quiet hours),
each once — across a restart too — and a silent group with neither hears nothing, and the tick says
so."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from runtime.extensions import LifeDirector, TickReport
from tests.app.conftest import FakeClock, Harness, make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio

ZONE = ZoneInfo("Asia/Shanghai")
PROMISED, LATE, SILENT, HOOKED = "group:800", "group:810", "group:700", "group:820"
TICK = 600.0
MONDAY = datetime(2026, 3, 2, 0, 0, tzinfo=ZONE).timestamp()


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def local(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, ZONE)


def at(day: int, hour: int, minute: int = 0) -> float:
    """Local time ``hour:minute`` on the ``day``-th day from Monday 2026-03-02."""
    return datetime(2026, 3, 2 + day, hour, minute, tzinfo=ZONE).timestamp()


def in_quiet_hours(ts: float) -> bool:
    return local(ts).hour >= 23 or local(ts).hour < 8


def config(server: ScriptedOpenAIServer):  # type: ignore[no-untyped-def]
    return make_config(
        server, life={"enabled": True, "quiet_hours": "23:00-08:00", "timezone": "Asia/Shanghai"}
    )


def record_ticks(director: LifeDirector, reports: list[TickReport]) -> None:
    """Keep every TickReport the maintenance loop's ticks return."""
    tick: Callable[..., Awaitable[TickReport]] = director.tick

    async def recording(now: float | None = None) -> TickReport:
        report = await tick(now)
        reports.append(report)
        return report

    director.tick = recording  # type: ignore[method-assign]


async def live_until(h: Harness, until: float) -> None:
    """Tick every ten minutes of the virtual clock until ``until``, letting what falls due run."""
    while h.clock() < until:
        await h.runtime.maintenance.life()
        await h.settle()  # what the tick scheduled runs at the tick's time, as the alarm would run it
        await h.advance(TICK, step=TICK)


def grounded(reports: list[TickReport], chat_id: str) -> list[tuple[float, str]]:
    return [(r.now, g) for r in reports for chat, g in r.grounds if chat == chat_id]


async def test_a_promised_follow_up_speaks_once_at_its_time_in_a_silent_group_across_a_restart(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load(
        {
            "rules": [
                {
                    "when": {"contains": "回来跟进：“周末去哪玩”"},
                    "reply": call("reply", text="想好了：去爬山"),
                },
                {"when": {"contains": "回来跟进：“带伞的事”"}, "reply": call("reply", text="记得带伞")},
            ],
            "default": call("observe", reason="先不说"),
        }
    )
    clock = FakeClock(at(0, 10))
    reports: list[TickReport] = []
    async with running(config(openai_server), data_dir, clock=clock) as h:
        openai_server.push(
            call("follow_up", about="周末去哪玩", at="2026-03-04 15:00"),
            call("reply", text="好，我想想，回头告诉你"),
        )
        await h.say("灰风，帮我想想周末去哪玩，晚点告诉我", chat=PROMISED, addressed=True)
        await h.settle()
        # due at 02:00, in the quiet hours: it waits for 08:00
        openai_server.push(
            call("follow_up", about="带伞的事", at="2026-03-03 02:00"), call("reply", text="好")
        )
        await h.say("灰风，明天下雨的话回头提醒我一下", chat=LATE, addressed=True)
        await h.settle()
        await h.say("大家好", chat=SILENT, sender="77")  # the only message SILENT ever gets
        assert h.outbound.texts() == ["好，我想想，回头告诉你", "好"]
        record_ticks(h.runtime.bot.core.director, reports)
        await live_until(h, at(0, 12))
    assert [t for t in h.outbound.texts() if t not in ("好，我想想，回头告诉你", "好")] == []

    async with running(config(openai_server), data_dir, clock=clock) as h:  # a restart
        director = h.runtime.bot.core.director
        record_ticks(director, reports)
        await live_until(h, at(2, 15, 30))
        why = await h.runtime.control.why(PROMISED, None)
        assert "开口了——你说过会回来跟进：周末去哪玩" in why
        await live_until(h, at(7, 0))
        sent = h.outbound.sent
        hike = [s for s in sent if s.text == "想好了：去爬山"]
        umbrella = [s for s in sent if s.text == "记得带伞"]
        # once each, in its group, at its time: Wednesday 15:00; the 02:00 one at 08:00
        assert [s.chat_id for s in hike] == [PROMISED]
        assert at(2, 15) <= hike[0].time < at(2, 15) + TICK
        assert [s.chat_id for s in umbrella] == [LATE]
        assert at(1, 8) <= umbrella[0].time < at(1, 8) + TICK  # the first tick past the quiet hours
        assert [s for s in sent if s.text not in ("想好了：去爬山", "记得带伞")] == []
        assert not [s for s in sent if in_quiet_hours(s.time)]
        # the tick that emitted it says it had follow-up grounds; both groups were silent by then
        assert [g for _, g in grounded(reports, PROMISED)] == ["follow_up"]
        assert [g for _, g in grounded(reports, LATE)] == ["follow_up"]
        when = grounded(reports, PROMISED)[0][0]
        assert at(2, 15) <= when < at(2, 15) + TICK
        assert director.statistics().spoke == 2
        # the group with neither a follow-up nor a memory hook: nothing, and every tick said so
        assert grounded(reports, SILENT) == []
        late = [dict(r.silent).get(SILENT) for r in reports if not r.quiet and r.now < at(6, 10)]
        assert late
        assert set(late) == {"nothing to say"}
        assert "没有开口——没什么可说" in await h.runtime.control.why(SILENT, None)

    follow_up_requests = [r for r in openai_server.chat_requests if "回来跟进：“" in r.last_user_text]
    assert len(follow_up_requests) == 2


async def test_the_follow_up_tool_keeps_its_bounds(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": call("observe", reason="先不说")})
    limited = make_config(
        openai_server,
        life={
            "enabled": True,
            "quiet_hours": "",
            "follow_ups_per_chat": 2,
            "follow_up_max_ahead_ms": 86_400_000,
        },
    )
    clock = FakeClock(at(0, 10))
    async with running(limited, data_dir, clock=clock) as h:
        openai_server.push(
            call("follow_up", about="太远的事", delay_minutes=3 * 1440),
            call("follow_up", about="过去的事", at="2026-03-01 10:00"),
            call("follow_up", about="两个时间", delay_minutes=30, at="2026-03-02 12:00"),
            call("follow_up", about="第一件", delay_minutes=30),
            call("follow_up", about="第二件", delay_minutes=60),
            call("follow_up", about="第三件", delay_minutes=90),
            call("reply", text="好"),
        )
        await h.say("灰风，回头跟我说", chat=PROMISED, addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["好"]
    results = [m["content"] for m in openai_server.chat_requests[-1].messages if m.get("role") == "tool"]
    assert "太远了" in results[0]
    assert "已经过去了" in results[1]
    assert "delay_minutes" in results[2]
    assert "回来跟进：第一件" in results[3]
    assert "回来跟进：第二件" in results[4]
    assert "已经有 2 件" in results[5]


async def test_a_remembered_day_is_brought_up_on_that_day_once_after_the_quiet_hours(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load(
        {
            "rules": [
                {"when": {"contains": "说的就是今天（3月3日）"}, "reply": call("reply", text="一路顺风")},
                {"when": {"contains": "说的就是今天（3月5日）"}, "reply": call("reply", text="考试加油")},
            ],
            "default": call("observe", reason="先不说"),
        }
    )
    clock = FakeClock(at(0, 10))
    reports: list[TickReport] = []
    async with running(config(openai_server), data_dir, clock=clock) as h:
        openai_server.push(call("remember", content="阿明明天出发去成都"), call("reply", text="好的"))
        await h.say("灰风，我明天出发去成都", chat=HOOKED, addressed=True)
        await h.advance(120, step=10)
        openai_server.push(call("remember", content="阿明3月5日考试"), call("reply", text="加油"))
        await h.say("灰风，还有我3月5日考试", chat=HOOKED, addressed=True)
        await h.advance(120, step=10)
        openai_server.push(call("remember", content="阿明喜欢吃辣"), call("reply", text="记住了"))
        await h.say("灰风，我喜欢吃辣", chat=HOOKED, addressed=True)
        await h.advance(120, step=10)
        assert h.outbound.texts() == ["好的", "加油", "记住了"]
        record_ticks(h.runtime.bot.core.director, reports)
        await live_until(h, at(1, 12))  # Tuesday noon: the first has come up by now
        trip = [s for s in h.outbound.sent if s.text == "一路顺风"]
        assert len(trip) == 1
        assert at(1, 8) <= trip[0].time < at(1, 8) + TICK  # its day, the first tick after the quiet hours

    async with running(config(openai_server), data_dir, clock=clock) as h:  # a restart, the same day
        director = h.runtime.bot.core.director
        record_ticks(director, reports)
        await live_until(h, at(3, 8, 30))
        why = await h.runtime.control.why(HOOKED, None)
        assert "开口了——记忆里今天的事：阿明3月5日考试" in why
        await live_until(h, at(7, 0))
        sent = h.outbound.sent
        exam = [s for s in sent if s.text == "考试加油"]
        assert len(exam) == 1
        assert at(3, 8) <= exam[0].time <= at(3, 8) + 2 * TICK  # not before its day
        assert [s.text for s in sent] == ["考试加油"]  # the trip is not brought up again
        assert not [s for s in sent if in_quiet_hours(s.time)]
    hooks = grounded(reports, HOOKED)
    assert [g for _, g in hooks] == ["memory_hook", "memory_hook"]
    assert local(hooks[0][0]).date() == local(at(1, 8)).date()
    assert local(hooks[1][0]).date() == local(at(3, 8)).date()
    cued = [r for r in openai_server.chat_requests if "说的就是今天" in r.last_user_text]
    assert len(cued) == 2
