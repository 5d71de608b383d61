"""The kernel's reason codes, said in Chinese at the answer side; the codes themselves unchanged."""

from __future__ import annotations

import pytest

from runtime.app.reasons_zh import action_zh, decision_zh, reason_zh, state_zh
from runtime.kernel.budget import BudgetPolicy, GroupActor


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("forced (addressed to the bot)", "被点名（有人直接对我说话）"),
        ("keyword 原神 +0.30", "关键词 原神 +0.30"),
        ("recently replied -0.20", "刚回复过 -0.20"),
        ("score 0.41 < medium 0.45", "得分 0.41 < 中阈值 0.45"),
        ("score 0.80 >= high 0.75", "得分 0.80 ≥ 高阈值 0.75"),
        ("normal window full (3 per 600s)", "主动发言额度已满（每 600 秒 3 次）"),
        (
            "forced, dropped: forced cooldown (5s after the last speech)",
            "被点名，放弃：被点名回复冷却中（上次发言后 5 秒内）",
        ),
        ("superseded by ev-1", "被 ev-1 取代"),
        ("something new", "something new"),  # an unknown code is shown, untranslated
    ],
)
def test_reason_codes_are_said_in_chinese(code: str, said: str) -> None:
    assert reason_zh(code) == said


def test_the_budget_s_own_reasons_are_translated() -> None:
    roomy = BudgetPolicy(min_interval=60, max_per_window=5, window=600)
    cooling = GroupActor("group:1", roomy, roomy)
    cooling.record_speech(1000.0)
    tight = BudgetPolicy(min_interval=60, max_per_window=1, window=600)
    full = GroupActor("group:2", tight, tight)
    full.record_speech(1000.0)
    assert reason_zh(cooling.peek(1010.0).reason) == "主动发言冷却中（上次发言后 60 秒内）"
    assert reason_zh(full.peek(1100.0).reason) == "主动发言额度已满（每 600 秒 1 次）"


def test_values_are_said_in_chinese() -> None:
    assert decision_zh("forced") == "被点名"
    assert action_zh("recorded") == "仅记录"
    assert state_zh("skipped") == "已跳过"
