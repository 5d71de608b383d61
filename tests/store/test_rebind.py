"""A data directory from before chat keys named their account: every chat id in it gets its account.

A real SQLite file is given a row in every table that names a chat, with unbound ids (as the bot wrote
them before), plus a quiet-period file; the start-up path (from the recorded accounts) and the
operator's command (``python -m runtime.store rebind``) must leave no unbound id anywhere, lose no
row, and leave alone what names no chat.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.quiet import QUIET_FILE
from runtime.store.__main__ import main
from runtime.store.rebind import rebind_known
from runtime.store.sqlite import DB_FILENAME, SqliteStore
from runtime.store.sqlite.rebind import CHAT_COLUMNS
from runtime.store.sqlite.schema import load_migrations

ROOT = Path(__file__).resolve().parents[2]
OLD_GROUP, OLD_PRIVATE = "group:1", "private:7"
BOUND_GROUP, BOUND_PRIVATE = "qq:10001:group:1", "qq:10001:private:7"
# Tables that name no chat (their rows must come through untouched).
NO_CHAT = {"handoffs", "tasks", "user_profiles", "episode_steps", "memory_vectors", "schema_version"}


def _filler(name: str, kind: str) -> object:
    if name.endswith("_json"):
        return "{}" if "context" in name or name in ("payload_json", "extra_json", "summary_json") else "[]"
    return {"TEXT": f"{name}-x", "REAL": 1.0, "INTEGER": 0, "BLOB": b""}.get(kind.upper(), f"{name}-x")


def _insert(db: sqlite3.Connection, table: str, n: int, **values: object) -> None:
    columns = db.execute(f"PRAGMA table_info({table})").fetchall()
    row = {}
    for _, name, kind, notnull, _default, pk in columns:
        if name in values:
            row[name] = values[name]
        elif name in ("seq",) and pk:
            continue
        elif notnull or pk:
            row[name] = f"{table}-{n}" if pk or name == "id" else _filler(name, kind)
    names = ", ".join(row)
    db.execute(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))


def _old_data_dir(data_dir: Path) -> Path:
    """A data directory as the bot wrote it before chat keys named their account."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / DB_FILENAME
    asyncio.run(_open_and_close(path))  # the schema, exactly as the bot makes it
    db = sqlite3.connect(path)
    try:
        for n, chat in enumerate((OLD_GROUP, OLD_PRIVATE)):
            for table, column, _ in CHAT_COLUMNS:
                extra: dict[str, object] = {column: chat}
                if table == "memories":
                    extra["scope_type"] = "chat"
                if table == "lexicon_terms":
                    extra["scope"] = "group"
                if table == "messages":
                    extra.update(words="火锅", chars="火 锅", text="周末吃火锅")
                _insert(db, table, n, **extra)
        _insert(db, "memories", 9, scope_type="thread", scope_id="group:1")  # a thread's id, not a chat's
        _insert(db, "threads", 0, chat_ids_json=json.dumps([OLD_GROUP, OLD_PRIVATE]))
        _insert(db, "sessions", 9, chat_id=OLD_GROUP, screen_context_json=json.dumps({"chat_id": OLD_GROUP}))
        for table in ("handoffs", "tasks", "user_profiles"):
            _insert(db, table, 0)
        db.commit()
    finally:
        db.close()
    (data_dir / QUIET_FILE).write_text(
        json.dumps(
            {OLD_GROUP: {"until": None, "kind": "imposed"}, "group:2": {"until": None, "kind": "asked"}}
        ),
        encoding="utf-8",
    )
    return path


async def _open_and_close(path: Path) -> None:
    store = await SqliteStore.open(path)
    await store.close()


def _snapshot(path: Path) -> dict[str, list[tuple[object, ...]]]:
    db = sqlite3.connect(path)
    try:
        tables = [
            str(name)
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%' "
                "AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {table: sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for table in tables}
    finally:
        db.close()


def _unbound_cells(snapshot: dict[str, list[tuple[object, ...]]]) -> list[tuple[str, object]]:
    found = []
    for table, rows in snapshot.items():
        for row in rows:
            for cell in row:
                text = str(cell)
                if text in (OLD_GROUP, OLD_PRIVATE) or f'"{OLD_GROUP}"' in text or f'"{OLD_PRIVATE}"' in text:
                    found.append((table, cell))
    return found


def _check_rebound(path: Path) -> None:
    after = _snapshot(path)
    # The one unbound-looking value left is the thread memory's scope id, which names a thread.
    assert _unbound_cells(after) == [("memories", "group:1")]
    cells = {cell for rows in after.values() for row in rows for cell in row}
    assert {BOUND_GROUP, BOUND_PRIVATE} <= cells
    for table, _, _ in CHAT_COLUMNS:
        assert len(after[table]) >= 2, table  # no row lost
    quiet = json.loads((path.parent / QUIET_FILE).read_text(encoding="utf-8"))
    assert quiet == {
        BOUND_GROUP: {"until": None, "kind": "imposed"},
        "group:2": {"until": None, "kind": "asked"},
    }

    async def search() -> tuple[int, int, list[str]]:
        store = await SqliteStore.open(path)
        try:
            bound = len(await store.search_messages("火锅", chat_ids=[BOUND_GROUP]))
            old = len(await store.search_messages("火锅", chat_ids=[OLD_GROUP]))
            return bound, old, await store.unbound_chats()
        finally:
            await store.close()

    # The full-text index follows the rows (its chat id column is part of every search by chat).
    assert asyncio.run(search()) == (1, 0, [])


def test_every_column_that_names_a_chat_is_rebound() -> None:
    """A table added later with a chat column must join CHAT_COLUMNS (or this fails)."""
    schema = sqlite3.connect(":memory:")
    for migration in load_migrations():
        schema.executescript(migration.sql)
    # threads.chat_ids_json is rewritten as JSON; thread_chats follows it through its triggers (the
    # snapshot checks of the rebind tests find no unbound id there either).
    derived = {("threads", "chat_ids_json"), ("thread_chats", "chat_id")}
    covered = {(table, column) for table, column, _ in CHAT_COLUMNS} | derived
    tables = [name for (name,) in schema.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        if "fts" in table:
            continue
        columns = [row[1] for row in schema.execute(f"PRAGMA table_info({table})")]
        for column in columns:
            if "chat" in column or column == "conversation":
                assert (table, column) in covered, (table, column)
        assert table in NO_CHAT or any(t == table for t, _ in covered), table


def test_the_start_rebinds_the_chats_whose_account_was_recorded(tmp_path: Path) -> None:
    path = _old_data_dir(tmp_path / "data")
    before = _snapshot(path)

    async def start() -> tuple[int, list[str]]:
        store = await SqliteStore.open(path)
        try:
            report = await rebind_known(
                store,
                path.parent,
                {OLD_GROUP: BOUND_GROUP, OLD_PRIVATE: BOUND_PRIVATE, "group:2": "qq:10002:group:2"},
            )
            again = await rebind_known(
                store, path.parent, {OLD_GROUP: BOUND_GROUP, OLD_PRIVATE: BOUND_PRIVATE}
            )
            assert again.total == 0  # done once: nothing left to rebind
            return report.chats, await store.unbound_chats()
        finally:
            await store.close()

    chats, left = asyncio.run(start())
    assert (chats, left) == (3, [])
    _check_rebound_with_group_2(path, "qq:10002:group:2")
    assert sum(map(len, _snapshot(path).values())) == sum(map(len, before.values()))


def _check_rebound_with_group_2(path: Path, group_2: str) -> None:
    quiet_file = path.parent / QUIET_FILE
    quiet = json.loads(quiet_file.read_text(encoding="utf-8"))
    assert quiet.pop(group_2) == {"until": None, "kind": "asked"}
    quiet["group:2"] = {"until": None, "kind": "asked"}
    quiet_file.write_text(json.dumps(quiet), encoding="utf-8")
    _check_rebound(path)


def test_a_chat_whose_account_is_unknown_is_left_and_named(tmp_path: Path) -> None:
    path = _old_data_dir(tmp_path / "data")

    async def start() -> list[str]:
        store = await SqliteStore.open(path)
        try:
            await rebind_known(store, path.parent, {OLD_GROUP: BOUND_GROUP})
            return await store.unbound_chats()
        finally:
            await store.close()

    assert asyncio.run(start()) == [OLD_PRIVATE]


def test_the_operator_binds_every_old_chat_to_one_account(tmp_path: Path) -> None:
    path = _old_data_dir(tmp_path / "data")
    before = _snapshot(path)
    done = subprocess.run(
        [sys.executable, "-m", "runtime.store", "rebind", "--account", "10001", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "chats rebound:   3 to qq:10001" in done.stdout
    _check_rebound_with_group_2(path, "qq:10001:group:2")
    assert sum(map(len, _snapshot(path).values())) == sum(map(len, before.values()))
    # Run again: nothing is left to bind.
    assert main(["rebind", "--account", "10001", str(path)]) == 0


def test_a_row_whose_bound_twin_exists_is_kept_not_overwritten(tmp_path: Path) -> None:
    path = _old_data_dir(tmp_path / "data")
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE memory_summaries SET version = 7 WHERE conversation = ?", (OLD_GROUP,))
        _insert(db, "memory_summaries", 5, conversation=BOUND_GROUP)  # written by the bot since
    db.close()

    async def start() -> tuple[dict[str, int], list[str]]:
        store = await SqliteStore.open(path)
        try:
            report = await rebind_known(store, path.parent, {OLD_GROUP: BOUND_GROUP})
            return report.kept, await store.unbound_chats()
        finally:
            await store.close()

    kept, left = asyncio.run(start())
    assert kept == {"memory_summaries.conversation": 1}
    assert OLD_GROUP in left  # still there, for the operator to look at
    db = sqlite3.connect(path)
    rows = dict(db.execute("SELECT conversation, version FROM memory_summaries"))
    db.close()
    assert rows[OLD_GROUP] == 7
    assert rows[BOUND_GROUP] != 7


@pytest.mark.parametrize("account", ["", "a:b", "group"])
def test_a_bad_account_is_refused_and_changes_nothing(tmp_path: Path, account: str) -> None:
    path = _old_data_dir(tmp_path / "data")
    before = _snapshot(path)
    assert main(["rebind", "--account", account, str(path)]) == 2
    assert _snapshot(path) == before
