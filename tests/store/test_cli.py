"""``python -m runtime.store``: the status report, the backup, and a clear error for a bad file."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from runtime.store.__main__ import main
from runtime.store.records import StoredMessage
from runtime.store.sqlite import DB_FILENAME, SqliteStore


def test_status_and_backup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / DB_FILENAME

    async def fill() -> None:
        store = await SqliteStore.open(path)
        await store.append_messages(
            [StoredMessage("group:1", str(i), "u", "A", float(i), "备份") for i in range(3)]
        )
        await store.close()

    asyncio.run(fill())
    backup = tmp_path / "backups" / "copy.sqlite3"
    assert main([str(path), "--backup", str(backup)]) == 0
    out = capsys.readouterr().out
    assert "schema version:" in out
    assert re.search(r"^\s+messages\s+3$", out, re.MULTILINE), out

    async def read_backup() -> int:
        store = await SqliteStore.open(backup)
        try:
            return len(await store.search_messages("备份", chat_ids=["group:1"]))
        finally:
            await store.close()

    assert asyncio.run(read_backup()) == 3
    assert main([str(path), "--backup", str(backup)]) == 1  # never overwrites


def test_a_corrupt_file_is_reported_not_raised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / DB_FILENAME
    path.write_bytes(b"garbage" * 50)
    assert main([str(path)]) == 1
    assert "corrupt" in capsys.readouterr().err


def test_a_mistyped_path_is_refused_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "greywnid.sqlite3"
    assert main([str(missing)]) == 1
    assert "no database" in capsys.readouterr().err
    assert not missing.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_data_directory_stands_for_its_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def make() -> None:
        await (await SqliteStore.open(tmp_path / DB_FILENAME)).close()

    asyncio.run(make())
    assert main([str(tmp_path)]) == 0
    assert str(tmp_path / DB_FILENAME) in capsys.readouterr().out
