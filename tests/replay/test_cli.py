"""The replay command line over a small Chinese group-chat log: what the bot would do, and why.

The fixture (tests/replay/fixtures/groups.jsonl) holds four groups and a private chat: interleaved
conversations, an @, a reply to the bot, its name and alias opening messages, chatter, a quiet group
talking *about* the bot, and a flood of @ in one group. The config (replay.toml) allows 3 forced
replies per 10 minutes and 2 unforced ones per 30 minutes, at least 60 s apart.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.replay.helpers import (
    CONFIG,
    GROUPS,
    T0,
    Run,
    activation_lines,
    busy_log,
    message_lines,
    read_jsonl,
    run_cli,
)

MESSAGE_KEYS = {"message_id", "event_id", "thread_id", "attention", "decision", "reasons", "action"}
ACTIVATION_KEYS = {"ts", "type", "group_id", "event_id", "outcome"}


@pytest.fixture(scope="module")
def replay(groups_replay: tuple[Run, Path]) -> tuple[Run, Path]:
    return groups_replay


@pytest.fixture(scope="module")
def lines(replay: tuple[Run, Path]) -> list[dict[str, Any]]:
    return replay[0].lines()


def activation_of(lines: list[dict[str, Any]], event_id: str) -> list[dict[str, Any]]:
    return [a for a in activation_lines(lines) if a["event_id"] == event_id]


def test_one_line_per_message_and_per_activation_with_exactly_the_documented_fields(
    lines: list[dict[str, Any]],
) -> None:
    source = read_jsonl(GROUPS)
    messages = [line for line in lines if line.get("type") != "activation"]
    assert [m["message_id"] for m in messages] == [
        s["message_id"] for s in sorted(source, key=lambda s: s["ts"])
    ]
    assert all(set(m) == MESSAGE_KEYS for m in messages)
    activations = activation_lines(lines)
    assert activations
    assert all(set(a) == ACTIVATION_KEYS for a in activations)
    assert {a["outcome"] for a in activations} <= {"would_speak", "budget_blocked", "expired", "superseded"}
    events = {m["event_id"] for m in messages}
    assert all(a["event_id"] in events for a in activations)


def test_an_at_mention_is_forced_and_the_bot_would_speak_at_once(lines: list[dict[str, Any]]) -> None:
    at = message_lines(lines)[105]  # "@灰风 TaskGroup 和 gather 有什么区别？"
    assert (at["decision"], at["action"]) == ("forced", "act_now")
    assert at["reasons"][0] == "forced (addressed to the bot)"
    [spoken] = activation_of(lines, at["event_id"])
    assert spoken == {
        "ts": T0 + 30,
        "type": "activation",
        "group_id": 1001,
        "event_id": at["event_id"],
        "outcome": "would_speak",
    }
    # The activation line follows its message line directly.
    assert lines[lines.index(at) + 1] == spoken


@pytest.mark.parametrize(
    ("message_id", "why"),
    [
        (107, "a reply to the bot's own message 106"),
        (205, "the persona's name opening the message: 灰风在吗"),
        (208, "an alias opening the message: greywind 你觉得呢"),
        (501, "a private chat"),
        (502, "a private chat, a plain 谢谢"),
    ],
)
def test_other_ways_of_addressing_the_bot_are_forced(
    lines: list[dict[str, Any]], message_id: int, why: str
) -> None:
    line = message_lines(lines)[message_id]
    assert line["decision"] == "forced", why
    assert [a["outcome"] for a in activation_of(lines, line["event_id"])] == ["would_speak"], why


def test_private_chat_activations_have_no_group(lines: list[dict[str, Any]]) -> None:
    line = message_lines(lines)[501]
    [spoken] = activation_of(lines, line["event_id"])
    assert spoken["group_id"] is None


def test_chatter_and_at_someone_else_are_low_and_only_recorded(lines: list[dict[str, Any]]) -> None:
    by_id = message_lines(lines)
    for message_id in (201, 202, 203, 204, 108, 109, 110, 206, 209):
        line = by_id[message_id]
        assert (line["decision"], line["action"]) == ("low", "recorded"), message_id
        assert line["attention"] < 0.35
        assert not activation_of(lines, line["event_id"]), message_id


def test_the_bots_own_message_joins_the_thread_it_answers(lines: list[dict[str, Any]]) -> None:
    by_id = message_lines(lines)
    assert by_id[106]["reasons"] == ["the bot's own message"]
    assert by_id[106]["thread_id"] == by_id[105]["thread_id"] == by_id[107]["thread_id"]
    # Two conversations interleaved in group 1001 stay apart.
    assert by_id[101]["thread_id"] == by_id[103]["thread_id"]
    assert by_id[102]["thread_id"] == by_id[104]["thread_id"]
    assert by_id[101]["thread_id"] != by_id[102]["thread_id"]


def test_a_flood_of_at_is_blocked_beyond_the_forced_window(lines: list[dict[str, Any]]) -> None:
    by_id = message_lines(lines)
    flood = [by_id[i] for i in range(301, 307)]
    assert all(line["decision"] == "forced" for line in flood)
    assert [line["action"] for line in flood] == ["act_now"] * 3 + ["recorded"] * 3
    outcomes = [[a["outcome"] for a in activation_of(lines, line["event_id"])] for line in flood]
    assert outcomes == [["would_speak"]] * 3 + [["budget_blocked"]] * 3
    blocked = [activation_of(lines, line["event_id"])[0]["ts"] for line in flood[3:]]
    assert blocked == [T0 + 330, T0 + 340, T0 + 350]  # reported when each message came


def test_talk_about_the_bot_is_scheduled_superseded_and_spoken_at_its_own_time(
    lines: list[dict[str, Any]],
) -> None:
    by_id = message_lines(lines)
    first, second = by_id[401], by_id[402]  # 你们说灰风读过三体吗？ / 我猜灰风读过吧？ (a reply to it)
    assert (first["decision"], first["action"]) == ("medium", "scheduled")
    assert (second["decision"], second["action"]) == ("medium", "scheduled")
    [superseded] = activation_of(lines, first["event_id"])
    assert (superseded["outcome"], superseded["ts"]) == ("superseded", T0 + 104)
    [spoken] = activation_of(lines, second["event_id"])
    # medium_delay is 10 s: it fires then, before the next message of the log (at +120) is read.
    assert (spoken["outcome"], spoken["ts"]) == ("would_speak", T0 + 114)
    assert lines.index(spoken) < lines.index(by_id[403])


def test_with_the_bot_in_the_thread_a_question_about_it_scores_high(lines: list[dict[str, Any]]) -> None:
    line = message_lines(lines)[404]  # 那第二部灰风觉得怎么样？ in the thread the bot answered
    assert (line["decision"], line["action"]) == ("high", "scheduled")
    assert any(reason.startswith("thread +") for reason in line["reasons"])
    [spoken] = activation_of(lines, line["event_id"])
    assert (spoken["outcome"], spoken["ts"]) == ("would_speak", T0 + 182)  # high_delay 2 s


def test_speech_never_exceeds_either_budget(lines: list[dict[str, Any]]) -> None:
    decisions = {line["event_id"]: line["decision"] for line in lines if line.get("type") != "activation"}
    spoken: defaultdict[tuple[object, bool], list[float]] = defaultdict(list)
    for a in activation_lines(lines):
        if a["outcome"] == "would_speak":
            spoken[(a["group_id"], decisions[a["event_id"]] == "forced")].append(a["ts"])
    assert spoken
    for (_, forced), times in spoken.items():
        window, most, gap = (600.0, 3, 3.0) if forced else (1800.0, 2, 60.0)
        for i, start in enumerate(times):
            assert len([t for t in times[i:] if t < start + window]) <= most
        assert all(b - a >= gap for a, b in itertools.pairwise(times))


def test_the_table_on_stderr_counts_per_group(replay: tuple[Run, Path], lines: list[dict[str, Any]]) -> None:
    rows = {
        row.split()[0]: row.split()[1:]
        for row in replay[0].stderr.splitlines()
        if row.startswith(("group:", "private:", "total"))
    }
    header = [
        "msgs",
        "bot",
        "forced",
        "high",
        "medium",
        "low",
        "speak",
        "blocked",
        "expired",
        "supers.",
        "calls",
        "tokens",
    ]
    flood = dict(zip(header, map(int, rows["group:1003"]), strict=True))
    assert flood | {"tokens": 0} == {
        "msgs": 6, "bot": 0, "forced": 6, "high": 0, "medium": 0, "low": 0, "speak": 3, "blocked": 3,
        "expired": 0, "supers.": 0, "calls": 3, "tokens": 0,
    }  # fmt: skip
    assert flood["tokens"] > 3 * 100  # three assembled packets, each with the persona at least
    total = dict(zip(header, map(int, rows["total"]), strict=True))
    spoken = [a for a in activation_lines(lines) if a["outcome"] == "would_speak"]
    assert total["speak"] == total["calls"] == len(spoken)
    assert total["msgs"] + total["bot"] == len(read_jsonl(GROUPS))
    assert set(rows) == {"group:1001", "group:1002", "group:1003", "group:1004", "private:42", "total"}


def test_dump_packets_writes_the_packet_of_every_would_speak(
    replay: tuple[Run, Path], lines: list[dict[str, Any]]
) -> None:
    _, directory = replay
    files = sorted(directory.glob("*.json"))
    spoken = [a for a in activation_lines(lines) if a["outcome"] == "would_speak"]
    assert len(files) == len(spoken)
    packets = [json.loads(f.read_text("utf-8")) for f in files]
    assert [p["event_id"] for p in packets] == [a["event_id"] for a in spoken]
    by_event = {p["event_id"]: p for p in packets}
    at = message_lines(lines)[105]
    packet = by_event[at["event_id"]]
    sent = "\n".join(m["content"] for m in packet["prompt"]["messages"])
    assert "TaskGroup 和 gather 有什么区别" in sent  # the trigger
    assert packet["reason"] == "forced"
    assert packet["prompt_tokens"] > 0
    # Nothing from another group or the other conversation of the same group reaches the model.
    assert "早上好" not in sent
    assert "土豆" not in sent
    assert "三体" not in sent


def test_two_runs_give_identical_output_and_packets(replay: tuple[Run, Path], tmp_path: Path) -> None:
    first, first_packets = replay
    out, packets = tmp_path / "again.jsonl", tmp_path / "packets"
    again = run_cli(GROUPS, "--config", CONFIG, "--out", out, "--dump-packets", packets)
    assert again.code == 0, again.stderr
    assert again.stdout == ""  # --out takes the lines
    assert first.stdout
    assert out.read_text(encoding="utf-8") == first.stdout
    files = {f.name: f.read_bytes() for f in sorted(packets.iterdir())}
    assert files
    assert files == {f.name: f.read_bytes() for f in sorted(first_packets.iterdir())}
    table = [line for line in first.stderr.splitlines() if line.startswith(("group:", "total"))]
    assert table
    assert table == [line for line in again.stderr.splitlines() if line.startswith(("group:", "total"))]


def test_a_busy_log_replays_the_same_whatever_the_callers_hash_seed(tmp_path: Path) -> None:
    # Python salts string hashes per process; ties between threads of a busy log must still be
    # broken the same way in every run (the replay does not pin the seed).
    log = busy_log(tmp_path / "busy.jsonl")
    first = run_cli(log, "--config", CONFIG, hash_seed="1")
    second = run_cli(log, "--config", CONFIG, hash_seed="2")
    assert first.code == second.code == 0, first.stderr
    assert len(first.lines()) >= 600
    assert first.stdout == second.stdout


def test_a_bad_config_is_refused_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[budget]\nmax_per_windw = 3\n", encoding="utf-8")
    run = run_cli(GROUPS, "--config", bad)
    assert run.code == 2
    assert "budget.max_per_windw" in run.stderr
    assert run.stdout == ""


def test_a_missing_chat_log_is_refused(tmp_path: Path) -> None:
    run = run_cli(tmp_path / "nope.jsonl", "--config", CONFIG)
    assert run.code == 2
    assert "nope.jsonl" in run.stderr
