"""Logging: JSON lines, secrets masked by key and by value, NoneBot's loguru lines routed and masked."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
import structlog

from runtime.logs import (
    REDACTED,
    Redactor,
    configure_logging,
    event_lines_written,
    route_loguru,
    secret_values_from_env,
)

TOKEN = "onebot-token-8f3a9c"
API_KEY = "sk-live-0123456789abcdef"


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    yield buffer
    structlog.reset_defaults()


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_json_lines_with_secrets_masked(stream: io.StringIO) -> None:
    configure_logging(json=True, secrets=[TOKEN, API_KEY], stream=stream)
    log = structlog.get_logger("greywind.test")
    log.info(
        "connect",
        access_token=TOKEN,
        url=f"ws://host/onebot/v11/ws?access_token={TOKEN}",
        headers={"Authorization": f"Bearer {TOKEN}", "X-Self-ID": "10000"},
        detail=f"calling with key {API_KEY}",
        tokens_today=1234,
    )
    text = stream.getvalue()
    assert TOKEN not in text
    assert API_KEY not in text
    (record,) = lines(stream)
    assert record["event"] == "connect"
    assert record["access_token"] == REDACTED
    assert record["headers"] == {"Authorization": REDACTED, "X-Self-ID": "10000"}
    assert record["tokens_today"] == 1234, "a count named after tokens is not a secret"
    assert record["level"] == "info"


def test_levels_below_the_threshold_are_dropped(stream: io.StringIO) -> None:
    configure_logging(json=True, level="WARNING", stream=stream)
    log = structlog.get_logger("greywind.test")
    log.info("quiet")
    log.warning("loud")
    assert [r["event"] for r in lines(stream)] == ["loud"]


def test_nonebot_loguru_lines_are_routed_and_masked(stream: io.StringIO) -> None:
    from loguru import logger

    redactor = configure_logging(json=True, level="DEBUG", secrets=[TOKEN], stream=stream)
    route_loguru(redactor, level="DEBUG")
    try:
        logger.opt(colors=True).debug(f"Loaded <y>Config</y>: {{'onebot_access_token': '{TOKEN}'}}")
    finally:
        logger.remove()
    (record,) = lines(stream)
    assert TOKEN not in str(record["event"])
    assert REDACTED in str(record["event"])
    assert "<y>" not in str(record["event"])


@pytest.mark.parametrize(("level", "kept"), [("INFO", ["Received message"]), ("DEBUG", None)])
def test_nonebot_event_and_matcher_lines_are_dropped_unless_debugging_and_warnings_stay(
    stream: io.StringIO, level: str, kept: list[str] | None
) -> None:
    from loguru import logger

    redactor = configure_logging(json=True, level=level, stream=stream)
    route_loguru(redactor, level=level)
    lines_by_source = {
        "nonebot": "Event will be handled by Matcher(type='message')",
        "nonebot.internal.matcher.matcher": "Matcher(type='message') running complete",
        "nonebot.adapters.onebot.v11": "Received message",
    }
    # NoneBot's line per event received, at SUCCESS; a SUCCESS line of another kind stays.
    received = "OneBot V11 10000 | [message.group.normal]: Message 1000 from 42@[群:700001] '在吗'"
    try:
        for source, text in lines_by_source.items():
            logger.patch(lambda record, source=source: record.update(name=source)).info(text)
        logger.patch(lambda record: record.update(name="nonebot.message")).opt(colors=True).success(
            f"<m>{received.split(' | ')[0]}</m> | {received.split(' | ')[1]}"
        )
        logger.patch(lambda record: record.update(name="nonebot")).success("Running NoneBot...")
        logger.patch(lambda record: record.update(name="nonebot")).warning("[message.group] a warning")
    finally:
        logger.remove()
    events = [r["event"] for r in lines(stream)]
    everything = [*lines_by_source.values(), received, "Running NoneBot...", "[message.group] a warning"]
    assert events == (
        [*kept, "Running NoneBot...", "[message.group] a warning"] if kept is not None else everything
    )


def test_the_console_format_shows_local_time(stream: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    try:
        configure_logging(json=False, stream=stream)
        structlog.get_logger("greywind.test").info("hello")
        expected_hour = time.strftime("%Y-%m-%d %H", time.localtime())
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert stream.getvalue().startswith(expected_hour), stream.getvalue()
    assert "T" not in stream.getvalue().split(" ")[0]  # not the ISO UTC stamp of the JSON lines


def test_secret_values_come_from_variables_named_like_secrets() -> None:
    env = {
        "ONEBOT_ACCESS_TOKEN": TOKEN,
        "GREYWIND_LLM_API_KEY": API_KEY,
        "MY_PROVIDER": "xyz-secret-value",
        "PORT": "8080",
    }
    assert sorted(secret_values_from_env(env, extra_names=["MY_PROVIDER"])) == sorted(
        [TOKEN, API_KEY, "xyz-secret-value"]
    )


def test_short_values_are_not_masked_inside_text() -> None:
    redactor = Redactor(["abc"])
    assert redactor.mask("abc def") == "abc def"


@pytest.mark.parametrize(
    ("level", "written"),
    [("TRACE", True), ("DEBUG", True), ("debug", True), ("INFO", False), ("WARNING", False)],
)
def test_event_lines_are_written_at_debug_and_below(level: str, written: bool) -> None:
    assert event_lines_written(level) is written
