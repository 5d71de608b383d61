"""Nothing is dropped without a word: a forced message the forced budget refuses leaves a log line,
and a compression answer in any of the summary's shapes is taken, not refused and retried."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from runtime.memory.errors import InvalidSummaryError
from runtime.memory.summary import parse_summary_answer
from tests.app.conftest import make_config, running
from tests.support.openai_server import ScriptedOpenAIServer


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


SECTIONS = {
    "requirements": ["周五前交报告"],
    "confirmed_decisions": ["用 SQLite 存数据"],
    "user_preferences": {"communication_style": "简洁直接"},
    "open_questions": ["部署到哪台机器"],
    "emotional_signals": {"overall": "积极", "last_mood": "期待"},
}


@pytest.mark.parametrize(
    "answer",
    [
        # design/001's compressed.json exactly: metadata beside a "summary" object
        json.dumps(
            {
                "version": 3,
                "last_compressed_at": "2026-03-11T19:00:00+08:00",
                "total_rounds_processed": 47,
                "summary": SECTIONS,
            },
            ensure_ascii=False,
        ),
        # design/001's file, with a one-line "summary" beside the sections at the top
        json.dumps({"summary": "这轮聊了报告和数据库", **SECTIONS}, ensure_ascii=False),
        # the document under a key of its own
        json.dumps({"compressed.json": {"version": 4, "summary": SECTIONS}}, ensure_ascii=False),
        # the format example echoed in prose, then the answer
        '格式是 {"requirements": []} 这样。我的回答：'
        + json.dumps({"summary": SECTIONS}, ensure_ascii=False),
        # an extra key inside the body whose value is not a section's type, and one malformed section
        json.dumps(
            {"version": 4, "summary": {**SECTIONS, "notes": {"x": 1}, "emotional_signals": "积极"}},
            ensure_ascii=False,
        ),
    ],
    ids=[
        "compressed-json",
        "summary-text-beside-sections",
        "wrapped-document",
        "example-then-answer",
        "bad-section-kept-rest",
    ],
)
def test_a_summary_in_any_of_its_shapes_is_taken(answer: str) -> None:
    body = parse_summary_answer(answer)
    assert body.requirements == ("周五前交报告",)
    assert body.confirmed_decisions == ("用 SQLite 存数据",)
    assert body.user_preferences.communication_style == "简洁直接"
    assert body.open_questions == ("部署到哪台机器",)


def test_an_answer_with_nothing_readable_is_still_refused_with_the_reason() -> None:
    with pytest.raises(InvalidSummaryError, match="emotional_signals"):
        parse_summary_answer(json.dumps({"summary": {"emotional_signals": "积极", "notes": "x"}}))
    with pytest.raises(InvalidSummaryError, match="no summary section"):
        parse_summary_answer('{"summary": {"notes": "只有未知的键"}}')


@pytest.mark.asyncio
async def test_a_forced_message_past_the_forced_budget_is_logged_with_its_reason(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": {"tool_calls": [{"name": "reply", "arguments": {"text": "在"}}]}})
    config = make_config(
        openai_server,
        budget={"forced": {"min_interval_ms": 0, "max_per_window": 1, "window_ms": 600_000}},
        scheduling={"forced_deadline_ms": 1_000},
    )
    async with running(config, data_dir) as h:
        await h.say("灰风 第一个问题", addressed=True, sender="7")
        await h.settle()
        assert h.outbound.texts() == ["在"]
        with capture_logs() as logs:
            dropped = await h.say("灰风 第二个问题", addressed=True, sender="8")
            await h.settle()
    assert h.outbound.texts() == ["在"], "the budget held"
    lines = [line for line in logs if line.get("event") == "activation_dropped"]
    assert len(lines) == 1, logs
    (line,) = lines
    assert line["chat_id"] == "group:500"
    assert line["message_id"] == dropped.message_id
    assert line["forced"] is True
    assert "forced" in line["reason"]
    assert "dropped" in line["reason"]
