"""Malformed lines of a chat log are reported with their line numbers and skipped; the run goes on."""

from __future__ import annotations

from runtime.replay.addressing import Addressing
from runtime.replay.reader import read_log
from tests.replay.helpers import CONFIG, MALFORMED, activation_lines, message_lines, run_cli

RULES = Addressing("10000", ("灰风", "greywind"))


def test_the_cli_reports_each_bad_line_and_replays_the_good_ones() -> None:
    run = run_cli(MALFORMED, "--config", CONFIG)
    assert run.code == 0, run.stderr
    reported = {
        int(line.split("line ")[1].split(":")[0]): line
        for line in run.stderr.splitlines()
        if "(skipped)" in line
    }
    assert sorted(reported) == [2, 3, 4, 6, 7, 8, 10, 11, 13]  # line 5 is blank: nothing to report
    assert "not JSON" in reported[2]
    assert "missing field 'text'" in reported[3]
    assert "field 'user_id'" in reported[4]
    assert "'204'" in reported[4]
    assert "not a JSON object" in reported[6]
    assert "field 'ts'" in reported[7]
    assert "missing field 'group_id'" in reported[8]
    assert "field 'at.0'" in reported[10]
    assert "already used in group:1001 (line 1)" in reported[11]
    assert "not UTF-8" in reported[13]
    assert all(line.startswith(f"{MALFORMED}: line ") for line in reported.values())
    assert "9 line(s) skipped" in run.stderr

    lines = run.lines()
    by_id = message_lines(lines)
    assert list(by_id) == [1, 7, 9]  # the good lines, and the @ among them still answered
    assert by_id[7]["decision"] == "forced"
    assert [a["outcome"] for a in activation_lines(lines)] == ["would_speak", "would_speak"]


def test_wrong_types_are_not_coerced() -> None:
    lines = [
        '{"ts": true, "group_id": 1, "user_id": 2, "message_id": 3, "text": "x"}',
        '{"ts": 1.0, "group_id": "1", "user_id": 2, "message_id": 3, "text": "x"}',
        '{"ts": 1.0, "group_id": 1, "user_id": 2, "message_id": 3, "text": 5}',
        '{"ts": 1.0, "group_id": 1, "user_id": 2, "message_id": "", "text": "x"}',
        '{"ts": NaN, "group_id": 1, "user_id": 2, "message_id": 3, "text": "x"}',
        '{"ts": 1.0, "group_id": 1, "user_id": 2, "message_id": 3, "text": "x", "reply_to": [1]}',
        '{"ts": 1.0, "group_id": 1, "user_id": 2, "message_id": 4, "text": "ok", "extra": "ignored"}',
    ]
    messages, problems = read_log(lines, RULES)
    assert [p.line for p in problems] == [1, 2, 3, 4, 5, 6]
    assert [m.ref for m in messages] == [4]
    assert str(problems[0]).startswith("line 1: field 'ts'")


def test_a_bom_and_blank_lines_are_not_problems() -> None:
    lines = [
        '\ufeff{"ts": 2.0, "group_id": 1, "user_id": 2, "message_id": 1, "text": "早"}',
        "   ",
        "",
        '{"ts": 1.0, "group_id": 1, "user_id": 3, "message_id": 2, "text": "早啊"}',
    ]
    messages, problems = read_log(lines, RULES)
    assert problems == []
    assert [m.ref for m in messages] == [2, 1]  # replayed in time order
    assert [m.line for m in messages] == [4, 1]
