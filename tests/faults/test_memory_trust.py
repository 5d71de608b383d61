"""A memory about a person is filed under the one who said it, never under whoever the episode began for.

The real ``bot.py`` over a real WebSocket, the scripted model behind it, the bot's own SQLite file.
A member @s the bot, the model waits; another member speaks in the thread; the resumed episode calls
``remember(scope="user")`` on what that other member said. The memory must be the speaker's — in the
store (owner, source message, speaker) and in whose private-chat prompt it shows up.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from runtime.store.records import Memory, ScopeType
from runtime.store.sqlite import LATEST_VERSION, SqliteStore
from runtime.store.sqlite.schema import DB_FILENAME
from tests.e2e.bot_process import BotProcess
from tests.e2e.live import (
    TaggedModel,
    connected_peer,
    reply_call,
    scripted_bot,
    tag,
    tool_call,
    wait_call,
)
from tests.support import onebot_events as ob
from tests.support.openai_server import RecordedRequest
from tests.support.sqlite_work import database_before

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
GROUP = 820_001
ASKER, OTHER = 601, 602
CONFIG = """
[scheduling]
high_delay_ms = 200
medium_delay_ms = 300

[budget.forced]
min_interval_ms = 0

[episodes]
min_wait_ms = 500
wake_delay_ms = 200

[models]
retry_backoff_ms = 50
retry_backoff_cap_ms = 200

[outbound]
max_per_minute = 600
burst = 100
retry_delay_ms = 100
"""

OWN_FACT = "自己说喜欢爬山"
HEARSAY = "欠款五百块是真的"
NAMED = "欠款五百块已确认"
FORGED = "伪造的欠款记录"
ASKER_NAMED = "周末要去爬山"


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory, model: TaggedModel) -> Iterator[BotProcess]:
    with scripted_bot(tmp_path_factory.mktemp("memory-trust"), model.server, config=CONFIG) as process:
        yield process


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def _calls_so_far(request: RecordedRequest) -> int:
    return sum(1 for m in request.messages if m.get("role") == "assistant" and m.get("tool_calls"))


def _resumed(request: RecordedRequest) -> bool:
    return any("resumed after waiting" in _text(m) for m in request.messages)


def _newest_id_said_by(request: RecordedRequest, user: int) -> str:
    """The message id the model was shown for ``user``'s line in the resume news."""
    found = re.findall(rf"\[{user}\] #([^\s:)]+)", "\n".join(_text(m) for m in request.messages))
    return found[-1] if found else "not-shown"


def script(request: RecordedRequest, _nth: int) -> dict[str, Any]:
    """The asker's episode: remember the asker's own words, wait; resumed: remember what was heard."""
    n = _calls_so_far(request)
    if not _resumed(request):
        if "帮我记一下" not in request.last_user_text:
            return tool_call("observe", reason="不是问我的")
        return (tool_call("remember", content=OWN_FACT, scope="user"), wait_call(0.5))[min(n, 1)]
    answers = [
        tool_call("remember", content=HEARSAY, scope="user"),
        tool_call("remember", content=NAMED, scope="user", message_id=_newest_id_said_by(request, OTHER)),
        tool_call("remember", content=FORGED, scope="user", message_id="424242424"),
        tool_call(
            "remember", content=ASKER_NAMED, scope="user", message_id=_newest_id_said_by(request, ASKER)
        ),
        reply_call(f"好，记下了{tag('mt')}"),
    ]
    return answers[min(n - 2, len(answers) - 1)]


def memories(bot: BotProcess) -> dict[str, tuple[str, str]]:
    """content -> (scope_type, scope_id), read from the bot's SQLite file."""
    with sqlite3.connect(f"file:{bot.data_dir / DB_FILENAME}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT content, scope_type, scope_id FROM memories").fetchall()
    return {content: (scope_type, scope_id) for content, scope_type, scope_id in rows}


def sources(bot: BotProcess) -> dict[str, tuple[str | None, str | None]]:
    with sqlite3.connect(f"file:{bot.data_dir / DB_FILENAME}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT content, source_message_id, source_speaker_id FROM memories").fetchall()
    return {content: (message_id, speaker) for content, message_id, speaker in rows}


async def test_another_members_words_become_that_members_memory_not_the_askers(
    bot: BotProcess, model: TaggedModel
) -> None:
    model.on("mt", script)
    async with connected_peer(bot, self_id=SELF_ID) as peer:
        asked = ob.group_message(
            self_id=SELF_ID,
            group_id=GROUP,
            user_id=ASKER,
            message=[ob.at(SELF_ID), ob.text(f" {tag('mt')}帮我记一下，我周末要去爬山")],
        )
        await peer.post(asked)
        await bot.await_log("episode_end", lambda r: r.get("outcome") == "waiting", within=20)
        hearsay = ob.group_message(
            self_id=SELF_ID,
            group_id=GROUP,
            user_id=OTHER,
            message=[ob.reply(asked["message_id"]), ob.text(f"{tag('mt')}顺便记着，他欠我五百块")],
        )
        await peer.post(hearsay)
        await peer.wait_for_call("send_group_msg", lambda c: "记下了" in c.text, within=20)
        await asyncio.sleep(0.5)

        stored = memories(bot)
        assert stored[OWN_FACT] == ("user", str(ASKER)), "the asker's own words are the asker's"
        assert stored[HEARSAY] == ("user", str(OTHER)), "by default: the newest message heard, the other's"
        assert stored[NAMED] == ("user", str(OTHER))
        assert FORGED not in stored, "a message the episode never saw cannot be a memory's source"
        assert stored[ASKER_NAMED] == ("user", str(ASKER)), "the message that began it can be named too"
        origin = sources(bot)
        assert origin[OWN_FACT] == (str(asked["message_id"]), str(ASKER))
        assert origin[HEARSAY] == (str(hearsay["message_id"]), str(OTHER))
        assert origin[NAMED] == (str(hearsay["message_id"]), str(OTHER))

        # Each in their private chat: the asker's prompt does not carry what the other member said.
        for user, name in ((ASKER, "pva"), (OTHER, "pvb")):
            await peer.post(
                ob.private_message(
                    self_id=SELF_ID, user_id=user, message=[ob.text(f"{tag(name)}五百块欠款的事你还记得吗")]
                )
            )
            await peer.wait_for_call("send_private_msg", lambda c, n=name: tag(n) in c.text, within=20)
    (asker_prompt,) = model.requests_for("pva")
    (other_prompt,) = model.requests_for("pvb")
    assert HEARSAY not in asker_prompt.all_text
    assert NAMED not in asker_prompt.all_text
    assert HEARSAY in other_prompt.all_text, "the memory reaches the one who said it"


async def test_a_database_from_before_memory_sources_opens_and_keeps_its_memories(tmp_path: Path) -> None:
    """The source columns are added to an existing file; its memories stay, with no source."""
    with sqlite3.connect(tmp_path / DB_FILENAME) as db:
        before = database_before(db, lambda migration: "source_message_id" in migration.sql)
        db.execute(
            "INSERT INTO memories (id, scope_type, scope_id, memory_type, content, importance, tags_json,"
            " created_at, updated_at, extra_json) VALUES ('old', 'user', '7', 'note', '老记忆', 0.5, '[]',"
            " 1, 1, '{}')"
        )
    store = await SqliteStore.open(tmp_path / DB_FILENAME)
    try:
        assert store.schema_version == LATEST_VERSION > len(before)
        old = await store.get_memory("old")
        new = Memory(
            id="new",
            scope_type=ScopeType.USER,
            scope_id="8",
            memory_type="note",
            content="新记忆",
            importance=0.5,
            created_at=2.0,
            source_message_id="m1",
            source_speaker_id="8",
        )
        await store.upsert_memory(new)
        assert await store.get_memory("new") == new
        listed = await store.list_memories(scopes=[(ScopeType.USER, "7")])
    finally:
        await store.close()
    assert old is not None
    assert (old.content, old.scope_id, old.source_message_id, old.source_speaker_id) == (
        "老记忆",
        "7",
        None,
        None,
    )
    assert [memory.id for memory in listed] == ["old"], "the old memory is still listed for its owner"
