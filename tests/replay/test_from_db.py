"""``--from-db DATA_DIR``: the bot's own SQLite store, written with the store's API, replayed.

Replaying the database gives the same lines as replaying the log the database was filled from, and
under another config it gives that config's decisions: the tuning loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from runtime.kernel.message import ChatKind, ChatMessage
from runtime.replay.addressing import Addressing
from runtime.replay.database import guess_self_id
from runtime.replay.reader import read_log
from runtime.store.records import StoredMessage
from runtime.store.sqlite import DB_FILENAME, SqliteStore
from tests.replay.helpers import CONFIG, GROUPS, Run, activation_lines, message_lines, run_cli


async def write_store(data_dir: Path, messages: Sequence[StoredMessage]) -> None:
    store = await SqliteStore.open(data_dir / DB_FILENAME)
    try:
        await store.append_messages(messages)
    finally:
        await store.close()


def stored_from_log(log: Path) -> list[StoredMessage]:
    """The fixture's messages as the edge would have stored them (addressed verdict included)."""
    with log.open("rb") as handle:
        messages, problems = read_log(handle, Addressing("10000", ("灰风", "greywind")))
    assert problems == []
    return [StoredMessage.from_chat_message(s.message) for s in messages]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("data")
    asyncio.run(write_store(directory, stored_from_log(GROUPS)))
    return directory


def test_replaying_the_database_gives_the_lines_of_the_log_it_holds(
    data_dir: Path, groups_replay: tuple[Run, Path]
) -> None:
    from_db = run_cli("--from-db", data_dir, "--config", CONFIG)
    assert from_db.code == 0, from_db.stderr
    assert from_db.stdout
    assert from_db.stdout == groups_replay[0].stdout


def test_another_config_changes_the_decisions(data_dir: Path, tmp_path: Path) -> None:
    generous = tmp_path / "generous.toml"
    generous.write_text("[budget.forced]\nmin_interval_ms = 0\nmax_per_window = 10\n", encoding="utf-8")
    lines = run_cli("--from-db", data_dir, "--config", generous).lines()
    flood = [message_lines(lines)[i]["event_id"] for i in range(301, 307)]
    outcomes = {a["event_id"]: a["outcome"] for a in activation_lines(lines)}
    assert [outcomes[e] for e in flood] == ["would_speak"] * 6  # blocked from the 4th under replay.toml


def test_the_bots_id_is_taken_from_its_own_stored_messages(tmp_path: Path) -> None:
    def message(mid: str, at: float, sender: str, text: str, **kw: object) -> StoredMessage:
        chat = ChatMessage(mid, ChatKind.GROUP, "9", sender, sender, 1767225600.0 + at, text, **kw)  # type: ignore[arg-type]
        return StoredMessage.from_chat_message(chat)

    rows = [
        message("1", 0, "20000", "大家好，我是灰风", from_self=True),
        message("2", 5, "3", "你好", mentions=("20000",)),
        message("3", 9, "4", "你好", mentions=("10000",)),
    ]
    asyncio.run(write_store(tmp_path, rows))
    assert guess_self_id(rows) == "20000"
    lines = run_cli("--from-db", tmp_path, "--config", CONFIG).lines()
    by_id = message_lines(lines)
    assert by_id[1]["reasons"] == ["the bot's own message"]
    assert by_id[2]["decision"] == "forced"  # an @ of 20000, the id the bot sent from
    assert by_id[3]["decision"] == "low"
    explicit = message_lines(run_cli("--from-db", tmp_path, "--config", CONFIG, "--self-id", "10000").lines())
    assert (explicit[2]["decision"], explicit[3]["decision"]) == ("low", "forced")  # --self-id wins


def test_a_directory_without_a_database_is_refused(tmp_path: Path) -> None:
    run = run_cli("--from-db", tmp_path / "empty", "--config", CONFIG)
    assert run.code == 2
    assert "no GreyWind database" in run.stderr
    assert not (tmp_path / "empty").exists()  # nothing created on the way


def test_a_chat_quiet_in_the_bots_history_would_not_speak_during_its_quiet_period(
    data_dir: Path, tmp_path: Path
) -> None:
    from runtime.quiet import QUIET_IMPOSED, QuietPeriod
    from runtime.quiet_history import QUIET_HISTORY_FILE, append_quiet_changes

    before = run_cli("--from-db", data_dir, "--config", CONFIG).lines()
    spoke = [a for a in activation_lines(before) if a["outcome"] == "would_speak"]
    assert spoke
    muted_group = spoke[0]["group_id"]
    (muted_chat,) = {m.chat_id for m in stored_from_log(GROUPS) if m.chat_id.endswith(f":{muted_group}")}
    times = [a["ts"] for a in spoke if a["group_id"] == muted_group]
    quiet_dir = tmp_path / "data"
    quiet_dir.mkdir()
    (quiet_dir / DB_FILENAME).write_bytes((data_dir / DB_FILENAME).read_bytes())
    # The bot was muted in that chat for the whole log, then unmuted: its history says so.
    history = quiet_dir / QUIET_HISTORY_FILE
    append_quiet_changes(history, {}, {muted_chat: QuietPeriod(None, QUIET_IMPOSED)}, min(times) - 1)
    append_quiet_changes(history, {muted_chat: QuietPeriod(None, QUIET_IMPOSED)}, {}, max(times) + 1)
    after = activation_lines(run_cli("--from-db", quiet_dir, "--config", CONFIG).lines())
    in_chat = [a for a in after if a["group_id"] == muted_group]
    assert [a for a in in_chat if a["outcome"] == "would_speak"] == []
    assert len([a for a in in_chat if a["outcome"] == "quiet"]) == len(times)
    other = [a for a in after if a["group_id"] != muted_group and a["outcome"] == "would_speak"]
    assert len(other) == len([a for a in spoke if a["group_id"] != muted_group])
