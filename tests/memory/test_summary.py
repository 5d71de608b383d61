"""The compressed.json schema: what a model may answer, what is stored, and trimming by priority."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.config.memory_injection import SUMMARY_SECTIONS
from runtime.context.tokens import RoughTokenCounter
from runtime.memory.errors import InvalidSummaryError
from runtime.memory.summary import (
    ITEM_MAX_CHARS,
    CompressedSummary,
    SummaryBody,
    iso_time,
    parse_summary_answer,
    summary_slot,
    summary_tokens,
    trim_summary,
)

PRIORITY = ("confirmed_decisions", "requirements", "open_questions", "user_preferences", "emotional_signals")
COUNT = RoughTokenCounter().count

SEED_EXAMPLE = {
    "version": 3,
    "last_compressed_at": "2026-03-11T19:00:00+08:00",
    "total_rounds_processed": 47,
    "summary": {
        "requirements": ["用户需求要点列表"],
        "confirmed_decisions": ["已确认的技术方案"],
        "user_preferences": {
            "communication_style": "简洁直接/详细解释",
            "design_preference": "暗色系/亮色系",
            "tech_level": "基础/中级/高级",
        },
        "open_questions": ["未解决的问题"],
        "emotional_signals": {"overall": "积极/消极/中性", "last_mood": "最近一次情感信号"},
    },
}


def test_the_seed_example_validates_and_round_trips() -> None:
    document = CompressedSummary.from_json(SEED_EXAMPLE)
    assert document.summary.user_preferences.design_preference == "暗色系/亮色系"
    again = document.to_json()
    assert again["summary"] == SEED_EXAMPLE["summary"]
    assert CompressedSummary.from_json(again) == document


@pytest.mark.parametrize(
    "bad",
    [
        {**SEED_EXAMPLE, "last_compressed_at": "yesterday"},
        {**SEED_EXAMPLE, "total_rounds_processed": -1},
        {**SEED_EXAMPLE, "extra_field": 1},
        {**SEED_EXAMPLE, "summary": {"user_preferences": ["not", "a", "map"]}},
    ],
)
def test_documents_breaking_the_schema_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):  # pydantic's ValidationError is a ValueError
        CompressedSummary.from_json(bad)


@pytest.mark.parametrize(
    "answer",
    [
        json.dumps(SEED_EXAMPLE["summary"], ensure_ascii=False),
        json.dumps(SEED_EXAMPLE, ensure_ascii=False),
        "好的，这是摘要：\n```json\n" + json.dumps(SEED_EXAMPLE["summary"], ensure_ascii=False) + "\n```",
        "摘要如下 " + json.dumps(SEED_EXAMPLE["summary"], ensure_ascii=False) + " 以上。",
    ],
    ids=["body", "document", "fenced", "in-prose"],
)
def test_answers_in_the_usual_shapes_parse_to_the_same_body(answer: str) -> None:
    assert parse_summary_answer(answer) == CompressedSummary.from_json(SEED_EXAMPLE).summary


def test_a_sloppy_answer_is_coerced_not_refused() -> None:
    body = parse_summary_answer(
        json.dumps(
            {
                "requirements": "只有一条需求",
                "confirmed_decisions": ["用 SQLite", "用 SQLite", "  ", 42, "很长" * 400],
                "user_preferences": {"tech_level": "高级", "colours": ["黑", "灰"], "nested": {"x": 1}},
                "open_questions": None,
                "mood": "ignored: not a section",
            },
            ensure_ascii=False,
        )
    )
    assert body.requirements == ("只有一条需求",)
    assert body.confirmed_decisions[:2] == ("用 SQLite", "42")
    assert len(body.confirmed_decisions) == 3
    assert len(body.confirmed_decisions[2]) == ITEM_MAX_CHARS
    assert body.user_preferences.items() == {"tech_level": "高级", "colours": "黑、灰"}
    assert body.open_questions == ()


@pytest.mark.parametrize(
    "answer",
    ["", "   ", "我记不住", "{not json", '{"foo": 1}', '{"summary": "一切正常"}', "[1, 2, 3]"],
)
def test_answers_without_a_summary_raise_invalid_summary(answer: str) -> None:
    with pytest.raises(InvalidSummaryError):
        parse_summary_answer(answer)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=20,
)
bodies = st.dictionaries(st.sampled_from([*SUMMARY_SECTIONS, "other"]), json_values, max_size=6)


@given(st.one_of(bodies, st.fixed_dictionaries({"summary": bodies}), json_values))
@settings(max_examples=300, deadline=None)
def test_any_json_answer_gives_a_valid_document_or_invalid_summary(value: Any) -> None:
    try:
        body = parse_summary_answer(json.dumps(value, ensure_ascii=False))
    except InvalidSummaryError:
        return
    document = CompressedSummary(version=1, last_compressed_at=iso_time(1_795_000_000.0), summary=body)
    assert CompressedSummary.model_validate_json(json.dumps(document.to_json())) == document


def _body(per_section: int) -> SummaryBody:
    return SummaryBody(
        requirements=tuple(f"需求{i}：要一个能长期记住事情的群聊机器人" for i in range(per_section)),
        confirmed_decisions=tuple(f"决定{i}：用 SQLite 存储，用 jieba 分词" for i in range(per_section)),
        open_questions=tuple(f"问题{i}：要不要支持语音消息" for i in range(per_section)),
        user_preferences={"communication_style": "简洁直接", "tech_level": "高级"},  # type: ignore[arg-type]
        emotional_signals={"overall": "积极", "last_mood": "期待"},  # type: ignore[arg-type]
    )


@given(st.integers(min_value=0, max_value=30), st.integers(min_value=0, max_value=2_000))
@settings(max_examples=60, deadline=None)
def test_trimming_fits_the_budget_and_drops_lowest_priority_first(per_section: int, budget: int) -> None:
    body, dropped = trim_summary(_body(per_section), budget, PRIORITY, COUNT)
    size = summary_tokens(body, PRIORITY, COUNT)
    assert size <= budget  # an emptied summary renders nothing at all
    # A lower-priority section is only non-empty when every higher one is whole.
    full = _body(per_section)
    if body.emotional_signals.last_mood or body.user_preferences.items():
        assert body.open_questions == full.open_questions
    if body.open_questions:
        assert body.requirements == full.requirements
    if body.requirements:
        assert body.confirmed_decisions == full.confirmed_decisions
    assert dropped >= 0


def test_a_tight_budget_keeps_confirmed_decisions_and_drops_emotions() -> None:
    body, dropped = trim_summary(_body(5), 120, PRIORITY, COUNT)
    assert dropped > 0
    assert body.confirmed_decisions
    assert not body.emotional_signals.last_mood
    assert not body.user_preferences.items()
    slot = summary_slot(CompressedSummary(summary=body), PRIORITY)
    assert slot.sections[0].name == "confirmed_decisions"


def test_iso_time_uses_the_seed_offset() -> None:
    assert iso_time(1_773_226_800.0) == "2026-03-11T19:00:00+08:00"
    assert iso_time(0.0, 0).endswith("+00:00")
