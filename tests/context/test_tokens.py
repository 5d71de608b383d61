"""Token counting for the assembler: the rough fallback errs high on Chinese; the runtime's estimator fits."""

from __future__ import annotations

import pytest

from runtime.context.tokens import RoughTokenCounter, as_counter, count_messages
from runtime.llm.tokens import TokenEstimator


def test_rough_counter_errs_high_on_chinese_and_counts_emoji() -> None:
    rough = RoughTokenCounter()
    assert rough.count("") == 0
    assert rough.count("继续写文档") >= 5  # never under one token per Han character
    assert rough.count("hello world") == 4
    assert rough.count("😀") >= 1
    assert rough.count("灰风" * 100) > rough.count("灰风" * 50)


def test_the_runtime_estimator_plugs_in_raw_or_calibrated() -> None:
    estimator = TokenEstimator()
    raw = as_counter(estimator)
    assert raw.count("灰风，继续") == estimator.count_text("灰风，继续")
    estimator.observe("m", raw_estimate=100, actual=150)
    calibrated = as_counter(estimator, model="m")
    assert calibrated.count("灰风，继续写文档" * 10) == estimator.estimate_text(
        "灰风，继续写文档" * 10, model="m"
    )
    assert calibrated.count("灰风，继续写文档" * 10) > raw.count("灰风，继续写文档" * 10)
    assert isinstance(as_counter(None), RoughTokenCounter)
    with pytest.raises(TypeError, match="count"):
        as_counter(object())


def test_messages_cost_their_content_plus_overheads() -> None:
    rough = RoughTokenCounter()
    messages = [{"role": "system", "content": "你是灰风"}, {"role": "user", "content": "继续"}]
    assert count_messages(messages, rough) == 3 + 4 + rough.count("你是灰风") + 4 + rough.count("继续")
