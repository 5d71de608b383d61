"""The day a memory ties to, resolved against its source message's time (Asia/Shanghai)."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from runtime.extensions.dates import hook_day

ZONE = "Asia/Shanghai"
# Wednesday 2026-12-02, 23:30 local: 15:30 UTC, still the 2nd in Shanghai.
WRITTEN = datetime(2026, 12, 2, 23, 30, tzinfo=ZoneInfo(ZONE)).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12月5日考试", date(2026, 12, 5)),
        ("他12月5号考试", date(2026, 12, 5)),
        ("十二月五日考驾照", date(2026, 12, 5)),
        ("生日是3月15日", date(2027, 3, 15)),  # passed this year: next year's
        ("下周三面试", date(2026, 12, 9)),
        ("下星期一交报告", date(2026, 12, 7)),
        ("下礼拜天去爬山", date(2026, 12, 13)),
        ("明天出发去成都", date(2026, 12, 3)),
        ("后天搬家", date(2026, 12, 4)),
        ("大后天回老家", date(2026, 12, 5)),
        ("2026-12-20 答辩", date(2026, 12, 20)),
        ("2027/01/03 结婚", date(2027, 1, 3)),
        ("2027年1月3日结婚", date(2027, 1, 3)),
        ("12-24 平安夜聚餐", date(2026, 12, 24)),
        ("exam on Dec 5", date(2026, 12, 5)),
        ("interview on 9 December", date(2026, 12, 9)),
        ("flying out tomorrow", date(2026, 12, 3)),
        ("moving the day after tomorrow", date(2026, 12, 4)),
        ("interview next Friday", date(2026, 12, 11)),
        ("12月5日考试，12月5日前要复习完", date(2026, 12, 5)),  # the same day twice is one day
    ],
)
def test_a_day_is_resolved_against_the_source_message_time(text: str, expected: date) -> None:
    assert hook_day(text, WRITTEN, ZONE) == expected


def test_the_source_message_time_is_read_in_the_configured_zone() -> None:
    # 23:30 on the 2nd in Shanghai is already 04:30 on the 3rd in Auckland (UTC+13).
    assert hook_day("明天出发", WRITTEN, ZONE) == date(2026, 12, 3)
    assert hook_day("明天出发", WRITTEN, "Pacific/Auckland") == date(2026, 12, 4)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "他喜欢吃辣",
        "2月30日考试",  # no such day
        "2026-13-01 开会",
        "12月5日或者12月6日考试",  # two different days: ambiguous
        "明天或者后天出发",
        "每月5号发工资",  # recurring: no one day
        "每周三开例会",
        "every Monday standup",
        "电话 138-0013-8000",
        "买了3-5个苹果",
        "版本 1.12-05 发布了",
        "2020-01-01 入职",  # already past
        "2029-01-01 毕业",  # more than a year ahead
        "周三面试",  # which Wednesday: not resolved
        "今天生日",  # today: it is being talked about already
    ],
)
def test_no_date_or_an_ambiguous_one_gives_nothing(text: str) -> None:
    assert hook_day(text, WRITTEN, ZONE) is None
