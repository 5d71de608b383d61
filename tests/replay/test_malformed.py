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


def test_a_private_message_from_the_bot_cannot_be_placed_and_is_reported() -> None:
    lines = [
        '{"ts": 1.0, "group_id": null, "user_id": 42, "message_id": 1, "text": "在吗"}',
        '{"ts": 2.0, "group_id": null, "user_id": 10000, "message_id": 2, "text": "在的"}',
    ]
    messages, problems = read_log(lines, RULES)
    assert [m.ref for m in messages] == [1]
    assert [(p.line, "peer" in p.reason) for p in problems] == [(2, True)]


def test_text_longer_than_the_edge_lets_through_is_cut_as_the_edge_cuts_it() -> None:
    long = "长" * 5_000
    line = f'{{"ts": 1.0, "group_id": 1, "user_id": 2, "message_id": 1, "text": "{long}"}}'
    [message], _ = read_log([line], Addressing("10000", ("灰风",), max_chars=100))
    assert message.message.text == "长" * 100 + "…[消息过长已截断，原文5000字]"


def test_the_log_can_come_from_stdin() -> None:
    text = MALFORMED.read_text(encoding="utf-8", errors="replace").splitlines()[0] + "\n"
    run = run_cli("-", "--config", CONFIG, stdin=text)
    assert run.code == 0, run.stderr
    assert [line["message_id"] for line in run.lines()] == [1]
