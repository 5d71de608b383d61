"""``[store] backend`` picks the store the running bot keeps its rows in, by name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runtime.config import ConfigError
from runtime.store.sqlite import DB_FILENAME
from tests.app.conftest import make_config, running
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.asyncio


def reply(text: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "reply", "arguments": {"text": text}}]}


async def test_the_memory_backend_serves_the_bot_and_writes_no_database(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    openai_server.load({"default": reply("在的")})
    config = make_config(openai_server, store={"backend": "memory"})
    async with running(config, data_dir) as h:
        asked = await h.say("灰风 在吗", addressed=True)
        await h.settle()
        assert h.outbound.texts() == ["在的"]
        assert h.runtime.store.statistics().backend == "memory"
        await h.runtime.writer.flush()  # the writer commits in batches: read what it has committed
        stored = await h.runtime.store.get_message("group:500", asked.message_id)
        assert stored is not None
        assert stored.text == "灰风 在吗"
    assert DB_FILENAME not in os.listdir(data_dir)


async def test_an_unknown_backend_stops_the_start_naming_the_key(
    openai_server: ScriptedOpenAIServer, data_dir: Path
) -> None:
    config = make_config(openai_server, store={"backend": "nosuch"})
    refused: list[ConfigError] = []
    try:
        async with running(config, data_dir):
            pytest.fail("the runtime started")
    except* ConfigError as group:  # the harness's task group wraps what start raised
        refused.extend(e for e in group.exceptions if isinstance(e, ConfigError))
    assert [e.keys for e in refused] == [("store.backend",)]
    assert "store.backend: no store backend is registered as 'nosuch'" in str(refused[0])
    assert "(registered: memory, postgresql, sqlite)" in str(refused[0])
    assert DB_FILENAME not in os.listdir(data_dir)
