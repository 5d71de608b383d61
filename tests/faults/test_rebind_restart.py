"""A data directory from before chat keys named their account: after the upgrade the bot carries on.

Against the real ``bot.py``: a conversation is held, the bot stops, and its data directory is turned
into what the bot wrote before chat keys carried the account (every ``qq:<self_id>:`` prefix dropped
from every table and from ``chat_owners.jsonl``). The bot starts again on it, either by itself (the
record of which account heard each chat rebinds it at start) or after the operator's
``python -m runtime.store rebind --account``; the member's follow-up is answered knowing the old
conversation, in the same conversation thread, its session handed over from the old one, and no
unbound chat id is left anywhere.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.store.sqlite import DB_FILENAME
from tests.e2e.bot_process import ROOT
from tests.e2e.conftest import StartBot
from tests.e2e.live import TaggedModel, connected_peer, own_errors, tag
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
GROUP = 800_801
MEMBER = 611
CONFIG = """
[scheduling]
high_delay_ms = 200
medium_delay_ms = 300
"""
PREFIX = f"qq:{SELF_ID}:"
OLD_CHAT = f"group:{GROUP}"


def _as_before_keys_named_the_account(data_dir: Path) -> int:
    """Drop the account from every chat id the data directory holds; how many cells changed."""
    db = sqlite3.connect(data_dir / DB_FILENAME)
    changed = 0
    try:
        with db:
            tables = [
                name
                for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                if "fts" not in name and not name.startswith("sqlite_")
            ]
            for table in tables:
                for _, column, kind, *_ in db.execute(f"PRAGMA table_info({table})").fetchall():
                    if kind.upper() != "TEXT":
                        continue
                    cur = db.execute(
                        f"UPDATE {table} SET {column} = REPLACE({column}, ?, '')"
                        f" WHERE instr({column}, ?) > 0",
                        (PREFIX, PREFIX),
                    )
                    changed += cur.rowcount
    finally:
        db.close()
    owners = data_dir / "chat_owners.jsonl"
    lines = [json.loads(line) for line in owners.read_text(encoding="utf-8").splitlines()]
    owners.write_text(
        "".join(json.dumps({**row, "chat": row["chat"].replace(PREFIX, "")}) + "\n" for row in lines),
        encoding="utf-8",
    )
    return changed


def _rows(data_dir: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    db = sqlite3.connect(data_dir / DB_FILENAME)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def _ask(text: str) -> dict[str, object]:
    return ob.group_message(
        self_id=SELF_ID, group_id=GROUP, user_id=MEMBER, message=[ob.at(SELF_ID), ob.text(text)]
    )


@pytest.mark.parametrize("how", ["at_start", "by_the_operator"])
async def test_after_the_upgrade_the_bot_continues_the_old_conversation(
    start_bot: StartBot, openai_server: ScriptedOpenAIServer, how: str
) -> None:
    model = TaggedModel(openai_server)
    first = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(first, self_id=SELF_ID) as peer:
        await peer.post(_ask(f" {tag('old')}周末我们去爬香山吧，带上野餐垫"))
        await peer.wait_for_call("send_group_msg", lambda c: tag("old") in c.text, within=15)
    assert first.stop() == 0
    data_dir = first.data_dir
    bound = f"{PREFIX}{OLD_CHAT}"
    (old_thread,) = {t for (t,) in _rows(data_dir, "SELECT thread_id FROM messages WHERE chat_id = ?", bound)}
    ((old_session, old_topic),) = _rows(
        data_dir, "SELECT id, thread_id FROM sessions WHERE chat_id = ?", bound
    )

    assert _as_before_keys_named_the_account(data_dir) > 0
    assert _rows(data_dir, "SELECT COUNT(*) FROM messages WHERE chat_id = ?", OLD_CHAT) == [(2,)]
    if how == "by_the_operator":
        (data_dir / "chat_owners.jsonl").unlink()  # nothing recorded: the operator names the account
        done = subprocess.run(  # noqa: ASYNC221 - the bot is stopped; nothing else runs meanwhile
            [
                sys.executable,
                "-m",
                "runtime.store",
                "rebind",
                "--account",
                str(SELF_ID),
                str(data_dir / DB_FILENAME),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "chats rebound:   1 to qq:10000" in done.stdout

    second = start_bot(model=openai_server, config=CONFIG)
    async with connected_peer(second, self_id=SELF_ID) as peer:
        await peer.post(_ask(f" {tag('new')}我们刚才说周末去哪来着？"))
        await peer.wait_for_call("send_group_msg", lambda c: tag("new") in c.text, within=15)
    assert second.stop() == 0
    assert own_errors(first) == own_errors(second) == []

    # The follow-up was deliberated knowing the old conversation.
    assert "香山" in model.requests_for("new")[-1].all_text
    # Nothing is left under the old id; the follow-up joined the old conversation thread.
    assert _rows(data_dir, "SELECT COUNT(*) FROM messages WHERE chat_id = ?", OLD_CHAT) == [(0,)]
    threads = {t for (t,) in _rows(data_dir, "SELECT thread_id FROM messages WHERE chat_id = ?", bound)}
    assert threads == {old_thread}
    assert _rows(data_dir, "SELECT DISTINCT chat_id FROM messages") == [(bound,)]
    assert _rows(data_dir, "SELECT COUNT(*) FROM messages WHERE from_self = 0") == [(2,)]
    # The old session handed over to the new one, in the same topic thread, in the bound chat.
    sessions = _rows(data_dir, "SELECT id, chat_id, thread_id FROM sessions ORDER BY started_at")
    assert [(chat, topic) for _, chat, topic in sessions] == [(bound, old_topic), (bound, old_topic)]
    handed = _rows(data_dir, "SELECT to_session_id FROM handoffs WHERE from_session_id = ?", old_session)
    assert handed == [(sessions[1][0],)]
    if how == "at_start":
        assert second.wait_for_log("chats_rebound", timeout=0)
