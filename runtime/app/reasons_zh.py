"""The kernel's reasons, said in Chinese for the admin answers (``/why``, ``/status``).

The kernel writes its reasons as short English codes (``forced (addressed to the bot)``, ``normal
cooldown (60s after the last speech)``, ``superseded by evt_…``); logs, the store and the replay's
golden output keep them as they are. The answers an operator reads are Chinese, so this module turns
a code into a phrase at the answer side. A code it does not know is shown unchanged: a new reason is
never hidden, only untranslated.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["action_zh", "decision_zh", "reason_zh", "state_zh"]

_KIND = {"normal": "主动发言", "forced": "被点名回复"}
_DECISIONS = {"forced": "被点名", "high": "高", "medium": "中", "low": "低"}
_ACTIONS = {"act_now": "立即处理", "scheduled": "已排期", "recorded": "仅记录"}
_STATES = {
    "captured": "已收到",
    "classified": "已分类",
    "linked": "已关联",
    "scheduled": "已排期",
    "eligible": "可处理",
    "deliberating": "思考中",
    "replied": "已回复",
    "skipped": "已跳过",
    "snoozed": "稍后再看",
    "expired": "已过期",
}
_FIXED = {
    "forced (addressed to the bot)": "被点名（有人直接对我说话）",
    "forced": "被点名",
    "attention low": "注意力低",
    "attention high": "注意力高",
    "attention medium": "注意力中",
    "quiet period": "安静期",
    "recalled": "消息已撤回",
    "cancelled": "已取消",
    "episode not restorable": "回合无法恢复",
    "not saved": "未能保存",
    "waiting": "等待中",
    "bot exchange": "机器人对话（连续太多条机器人消息，等有人说话）",
    "nothing to say": "没什么可说",
    "quiet_hours": "免打扰时段",
    "tick_cap": "这一拍发起的已经够多",
    "observed": "想了想，决定不说",
}
_NUMBER = r"[\d.]+"


def _score(match: re.Match[str]) -> str:
    level = {"high": "高", "medium": "中"}[match.group(3)]
    return f"得分 {match.group(1)} {'≥' if match.group(2) == '>=' else '<'} {level}阈值 {match.group(4)}"


_PATTERNS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(rf"direct ([+-]{_NUMBER})"), lambda m: f"直接相关 {m.group(1)}"),
    (re.compile(rf"keyword (.+) ([+-]{_NUMBER})"), lambda m: f"关键词 {m.group(1)} {m.group(2)}"),
    (re.compile(rf"keyword ([+-]{_NUMBER})"), lambda m: f"关键词 {m.group(1)}"),
    (re.compile(rf"thread ([+-]{_NUMBER})"), lambda m: f"话题相关 {m.group(1)}"),
    (re.compile(rf"question ([+-]{_NUMBER})"), lambda m: f"是提问 {m.group(1)}"),
    (re.compile(rf"silence ([+-]{_NUMBER})"), lambda m: f"冷场 {m.group(1)}"),
    (re.compile(rf"recently replied ([+-]{_NUMBER})"), lambda m: f"刚回复过 {m.group(1)}"),
    (re.compile(rf"budget exhausted ([+-]{_NUMBER})"), lambda m: f"发言额度用尽 {m.group(1)}"),
    (re.compile(rf"score ({_NUMBER}) (>=|<) (high|medium) ({_NUMBER})"), _score),
    (
        re.compile(rf"(normal|forced) window full \((\d+) per ({_NUMBER})s\)"),
        lambda m: f"{_KIND[m.group(1)]}额度已满（每 {m.group(3)} 秒 {m.group(2)} 次）",
    ),
    (
        re.compile(rf"(normal|forced) cooldown \(({_NUMBER})s after the last speech\)"),
        lambda m: f"{_KIND[m.group(1)]}冷却中（上次发言后 {m.group(2)} 秒内）",
    ),
    (re.compile(r"forced, delayed: (.+)"), lambda m: f"被点名，推迟：{reason_zh(m.group(1))}"),
    (re.compile(r"forced, dropped: (.+)"), lambda m: f"被点名，放弃：{reason_zh(m.group(1))}"),
    (re.compile(r"superseded by (\S+)"), lambda m: f"被 {m.group(1)} 取代"),
    (
        re.compile(r"no_activity: last real message (\d+) s ago"),
        lambda m: f"群里冷清（{m.group(1)} 秒没人说话），又没什么非说不可的",
    ),
    (re.compile(r"no_activity: nobody has spoken in this chat"), lambda m: "这里还没人说过话"),
    (re.compile(r"observe: (.+)"), lambda m: f"想了想，决定不说：{m.group(1)}"),
    (re.compile(r"life: (.+)"), lambda m: f"主动发言不合适：{reason_zh(m.group(1))}"),
    (re.compile(r"bot exchange \((\d+)\)"), lambda m: f"机器人对话（连续第 {m.group(1)} 条机器人消息）"),
)


def reason_zh(code: str) -> str:
    """The Chinese phrase for one of the kernel's reason codes; an unknown code unchanged."""
    fixed = _FIXED.get(code)
    if fixed is not None:
        return fixed
    for pattern, say in _PATTERNS:
        match = pattern.fullmatch(code)
        if match is not None:
            return say(match)
    return code


def decision_zh(value: str) -> str:
    return _DECISIONS.get(value, value)


def action_zh(value: str) -> str:
    return _ACTIONS.get(value, value)


def state_zh(value: str) -> str:
    return _STATES.get(value, value)
