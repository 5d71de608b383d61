"""The offline token estimate (errs high on Chinese, calibrates within bounds) and the daily ledger."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.llm.tokens import LedgerEntry, ModelCalibration, TokenEstimator, TokenLedger
from tests.support.openai_server import reference_prompt_tokens, reference_token_count

CHINESE = [
    "今天天气怎么样？",
    "灰风，帮我记一下：周五下午三点开会，地点在三楼会议室。",
    "我觉得这个方案还可以再改改，先把数据库那块做完再说吧。",
    "哈哈哈哈哈哈哈，笑死我了，你们看昨天那个视频没有？",
    "记忆注入每十轮刷新一次，摘要不超过八千个词元。",
]
MIXED = [
    "明天用 Python 3.11 跑一下 benchmark，看看 P99 延迟。",
    "OneBot v11 的反向 WebSocket 地址是 /onebot/v11/ws 吗？",
    "Please review PR #42 before 周五, 谢谢!",
]


def test_chinese_estimate_errs_high_but_not_wildly() -> None:
    estimator = TokenEstimator()
    for text in CHINESE:
        reference = reference_token_count(text)
        estimate = estimator.count_text(text)
        assert reference <= estimate <= reference * 1.15, text


def test_mixed_text_is_within_fifteen_percent() -> None:
    estimator = TokenEstimator()
    for text in MIXED:
        reference = reference_token_count(text)
        assert 0.9 * reference <= estimator.count_text(text) <= 1.15 * reference, text


def test_messages_count_their_overhead_and_tools() -> None:
    estimator = TokenEstimator()
    messages = [{"role": "system", "content": "你是灰风。"}, {"role": "user", "content": CHINESE[1]}]
    tools = [{"type": "function", "function": {"name": "reply", "parameters": {"type": "object"}}}]
    bare = estimator.raw_messages(messages)
    assert bare >= reference_prompt_tokens(messages)
    assert estimator.raw_messages(messages, tools) > bare
    assert estimator.raw_messages([*messages, {"role": "assistant", "content": ""}]) > bare


@given(st.text(max_size=200))
def test_estimate_never_below_the_reference_by_more_than_ten_percent(text: str) -> None:
    estimate = TokenEstimator().count_text(text)
    assert estimate >= 0.9 * reference_token_count(text) - 1


def test_calibration_follows_usage_but_never_drops_more_than_ten_percent() -> None:
    estimator = TokenEstimator()
    text = CHINESE[1] * 10
    raw = estimator.count_text(text)

    # A provider whose tokenizer packs Chinese tightly (0.6 tokens a character).
    for _ in range(20):
        estimator.observe("dense-model", raw, int(raw * 0.6))
    assert estimator.correction("dense-model") == pytest.approx(0.9)
    assert estimator.estimate_text(text, model="dense-model") >= 0.9 * raw

    # One that spends more (1.5x): the estimate climbs to meet it.
    for _ in range(20):
        estimator.observe("wide-model", raw, int(raw * 1.5))
    assert estimator.correction("wide-model") == pytest.approx(1.5, rel=0.02)
    assert estimator.estimate_text(text, model="wide-model") >= int(raw * 1.5)

    # An unknown model and a tiny sample leave the raw estimate alone.
    assert estimator.estimate_text(text, model="unseen") == raw
    estimator.observe("unseen", 5, 50)
    assert estimator.correction("unseen") == 1.0

    stats = estimator.statistics()
    assert {c.model for c in stats.calibrations} == {"dense-model", "wide-model"}
    assert stats.ignored == 1


def test_calibration_is_bounded_above_and_restorable() -> None:
    estimator = TokenEstimator()
    estimator.observe("odd", 100, 10_000)
    assert estimator.correction("odd") == 3.0
    fresh = TokenEstimator()
    fresh.restore([ModelCalibration("odd", 0.5, 3), ModelCalibration("ok", 1.2, 7)])
    assert fresh.correction("odd") == 0.9  # restored values are clamped like learned ones
    assert fresh.correction("ok") == 1.2


# -- ledger -------------------------------------------------------------------------------------------


def test_ledger_days_follow_the_configured_zone() -> None:
    ledger = TokenLedger(utc_offset_hours=8)
    assert ledger.day_of(1_795_982_400.0) == "2026-11-30"  # 20:00 UTC is past midnight in UTC+8
    assert TokenLedger(utc_offset_hours=0).day_of(1_795_982_400.0) == "2026-11-29"


def test_ledger_cap_blocks_only_the_chat_that_spent_it() -> None:
    ledger = TokenLedger(daily_cap_per_chat=1_000)
    ledger.record("group:1", "2026-11-30", prompt_tokens=700, completion_tokens=200)
    assert ledger.over_cap("group:1", "2026-11-30") is False
    assert ledger.remaining("group:1", "2026-11-30") == 100
    ledger.record("group:1", "2026-11-30", prompt_tokens=90, completion_tokens=10)
    assert ledger.over_cap("group:1", "2026-11-30") is True
    assert ledger.over_cap("group:2", "2026-11-30") is False
    assert ledger.over_cap("group:1", "2026-12-01") is False  # a new day
    assert ledger.entry("group:1", "2026-11-30") == LedgerEntry("group:1", "2026-11-30", 790, 210, 2)
    assert ledger.day_total("2026-11-30") == 1_000
    assert ledger.statistics().over_cap == 1


def test_no_cap_means_never_over() -> None:
    ledger = TokenLedger()
    ledger.record("group:1", "2026-11-30", prompt_tokens=10**9)
    assert ledger.over_cap("group:1", "2026-11-30") is False
    assert ledger.remaining("group:1", "2026-11-30") is None


def test_ledger_survives_a_restart_through_its_entries() -> None:
    before = TokenLedger(daily_cap_per_chat=500)
    before.record("group:1", "2026-11-30", prompt_tokens=300, completion_tokens=100)
    before.record("private:9", "2026-11-30", prompt_tokens=20)
    persisted = before.take_dirty()
    assert {e.chat_id for e in persisted} == {"group:1", "private:9"}
    assert before.take_dirty() == ()

    after = TokenLedger(daily_cap_per_chat=500)
    after.restore(persisted)
    after.record("group:1", "2026-11-30", prompt_tokens=100)
    assert after.over_cap("group:1", "2026-11-30") is True
    assert after.snapshot() == (
        LedgerEntry("group:1", "2026-11-30", 400, 100, 2),
        LedgerEntry("private:9", "2026-11-30", 20, 0, 1),
    )


def test_ledger_prunes_old_days() -> None:
    ledger = TokenLedger(keep_days=7)
    ledger.record("group:1", "2026-11-01", prompt_tokens=5)
    ledger.record("group:1", "2026-11-28", prompt_tokens=5)
    assert ledger.prune("2026-11-30") == 1
    assert [e.day for e in ledger.snapshot()] == ["2026-11-28"]


def test_a_long_text_counts_the_same_every_time_and_the_kept_counts_stay_few() -> None:
    estimator = TokenEstimator()
    persona = "你是灰风，一个住在群里的人。" * 60 + " Keep replies short, 1-2 sentences. 🙂" * 10
    first = estimator.count_text(persona)
    assert first == estimator.count_text(persona) == TokenEstimator().count_text(persona)
    assert first == estimator._count(persona)  # the uncounted path gives the same
    for n in range(1_000):
        text = f"{n} " + "长" * 600
        assert estimator.count_text(text) == estimator._count(text)
    assert len(estimator._counted) <= 256
