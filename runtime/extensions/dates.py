"""The day a memory ties to: "12月5日考试", "下周三面试", "明天出发", "2026-12-05", "next Friday".

A memory that names a day becomes a *memory hook*: on that day the bot may bring it up by itself
(:mod:`runtime.extensions.memory_hooks`). The day is resolved once, when the memory is written, against
the time of the message it was taken from, in the persona's time zone — "明天" said on Monday means
Tuesday however late the memory is read.

:func:`hook_day` is pure and deliberately narrow. It understands
- a full date: ``YYYY-MM-DD``, ``YYYY/MM/DD``, ``YYYY年M月D日``;
- a month and day: ``M月D日`` / ``M月D号``, ``MM-DD`` (two digits each), ``Dec 5`` / ``5 December``
  — the next such day, this year or the next;
- ``下周X`` / ``下星期X`` / ``下礼拜X``: that weekday of next week (weeks start on Monday), and
  ``next Monday``;
- ``明天`` / ``后天`` / ``大后天``, ``tomorrow`` / ``the day after tomorrow``.

Everything else gives ``None``: no date, two different dates, an impossible one (2月30日), a day
already past, one more than a year ahead, a recurring one (每月5号, every Monday). A hook that might
be wrong is worse than none.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

__all__ = ["hook_day"]

_HORIZON = timedelta(days=366)

_CN_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "七": 6}
_EN_WEEKDAY = {
    name: index
    for index, names in enumerate(
        (
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        )
    )
    for name in names
}
_EN_MONTH = {
    name: index
    for index, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}

# A number that is part of a longer one (a phone number, a version, "3-5个") is not a date.
_FULL = re.compile(
    r"(?<![\d.])(\d{4})\s*(?:[-/.]|年)\s*(\d{1,2})\s*(?:[-/.]|月)\s*(\d{1,2})(?![\d.])\s*[日号]?"
)
_MONTH_DAY_CN = re.compile(
    r"(?<![\d年])(\d{1,2}|[一二三四五六七八九十]{1,3})\s*月\s*(\d{1,2}|[一二三四五六七八九十]{1,3})\s*[日号]"
)
_MONTH_DAY_DASH = re.compile(r"(?<![\d./\-:])(\d{2})-(\d{2})(?![\d./\-:])")
_NEXT_WEEK_CN = re.compile(r"下(?:个)?(?:周|星期|礼拜)([一二三四五六日天七])")
_RELATIVE_CN = re.compile(r"大后天|后天|明天|明日|明早|明晚")
_EN_MONTH_NAMES = "|".join(sorted(_EN_MONTH, key=len, reverse=True))
_MONTH_DAY_EN = re.compile(
    rf"\b(?:({_EN_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?|(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_EN_MONTH_NAMES}))\b",
    re.IGNORECASE,
)
_EN_WEEKDAY_NAMES = "|".join(sorted(_EN_WEEKDAY, key=len, reverse=True))
_NEXT_WEEK_EN = re.compile(rf"\bnext\s+({_EN_WEEKDAY_NAMES})\b", re.IGNORECASE)
_RELATIVE_EN = re.compile(r"\b(?:the\s+day\s+after\s+tomorrow|tomorrow)\b", re.IGNORECASE)
# Recurring days name no one day: 每月5号, 每周三, every Monday, each year.
_RECURRING = re.compile(r"每(?:个)?(?:年|月|周|星期|礼拜|天)|\b(?:every|each)\b", re.IGNORECASE)


def hook_day(text: str, written_at: float, zone: str) -> date | None:
    """The one day ``text`` ties to, resolved against ``written_at`` in ``zone``; None if none, or
    if the text is ambiguous (see the module docstring)."""
    if not text or _RECURRING.search(text):
        return None
    today = datetime.fromtimestamp(written_at, ZoneInfo(zone)).date()
    found: set[date] = set()
    bad = False
    spans: list[tuple[int, int]] = []

    def add(day: date | None, span: tuple[int, int]) -> None:
        nonlocal bad
        if any(start < span[1] and span[0] < end for start, end in spans):
            return  # part of a date already read (the "12-05" inside "2026-12-05")
        spans.append(span)
        if day is None:
            bad = True
        else:
            found.add(day)

    for match in _FULL.finditer(text):
        add(_make(int(match[1]), int(match[2]), int(match[3])), match.span())
    for match in _MONTH_DAY_CN.finditer(text):
        month, day = _cn_number(match[1]), _cn_number(match[2])
        add(_next(today, month, day), match.span())
    for match in _MONTH_DAY_DASH.finditer(text):
        add(_next(today, int(match[1]), int(match[2])), match.span())
    for match in _MONTH_DAY_EN.finditer(text):
        month = _EN_MONTH[(match[1] or match[4]).lower()]
        add(_next(today, month, int(match[2] or match[3])), match.span())
    for match in _NEXT_WEEK_CN.finditer(text):
        add(_next_week(today, _CN_WEEKDAY[match[1]]), match.span())
    for match in _NEXT_WEEK_EN.finditer(text):
        add(_next_week(today, _EN_WEEKDAY[match[1].lower()]), match.span())
    for match in _RELATIVE_CN.finditer(text):
        ahead = {"大后天": 3, "后天": 2}.get(match[0], 1)
        add(today + timedelta(days=ahead), match.span())
    for match in _RELATIVE_EN.finditer(text):
        add(today + timedelta(days=1 if match[0].lower() == "tomorrow" else 2), match.span())
    if bad or len(found) != 1:
        return None
    (resolved,) = found
    if resolved < today or resolved - today > _HORIZON:
        return None
    return resolved


def _make(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _next(today: date, month: int | None, day: int | None) -> date | None:
    """The next ``month``/``day`` on or after ``today`` (this year's, else next year's)."""
    if month is None or day is None:
        return None
    this_year = _make(today.year, month, day)
    if this_year is not None and this_year >= today:
        return this_year
    following = _make(today.year + 1, month, day)
    if following is None and this_year is None:
        return None
    return following


def _next_week(today: date, weekday: int) -> date:
    monday = today - timedelta(days=today.weekday()) + timedelta(days=7)
    return monday + timedelta(days=weekday)


def _cn_number(text: str) -> int | None:
    """1..31 written in digits or in Chinese numerals (五, 十二, 二十五, 三十一)."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        return _CN_DIGITS.get(text) if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    if len(tens) > 1 or len(ones) > 1:
        return None
    value = (_CN_DIGITS.get(tens, 0) if tens else 1) * 10
    if tens and tens not in _CN_DIGITS:
        return None
    if ones:
        if ones not in _CN_DIGITS:
            return None
        value += _CN_DIGITS[ones]
    return value
