"""``[store] backend`` with the real process: a registered name serves, an unknown one stops the start."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.conftest import TEST_API_KEY
from tests.e2e.live import connected_peer, own_errors
from tests.support import onebot_events as ob
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio]

SELF_ID = 10_000
DB_FILE = "greywind.sqlite3"


async def test_the_memory_backend_answers_and_leaves_no_database(tmp_path: Path) -> None:
    with ScriptedOpenAIServer({"default": {"text": "在呢"}}) as model:
        bot = BotProcess(
            tmp_path,
            config='[store]\nbackend = "memory"\n',
            env={
                "GREYWIND_LLM_BASE_URL": model.base_url,
                "GREYWIND_LLM_MODEL": "scripted",
                "GREYWIND_LLM_API_KEY": TEST_API_KEY,
            },
        ).start()
        try:
            async with connected_peer(bot, self_id=SELF_ID) as peer:
                await peer.post(ob.private_message(self_id=SELF_ID, user_id=4_243, message=[ob.text("在吗")]))
                await peer.wait_for_call("send_private_msg", within=10)
            assert bot.stop(timeout=5) == 0
            assert own_errors(bot) == []
        finally:
            with contextlib.suppress(Exception):
                bot.stop(timeout=3)
            bot.kill()
    assert DB_FILE not in os.listdir(bot.data_dir)


async def test_an_unknown_backend_stops_the_start_with_the_key_and_the_choices(tmp_path: Path) -> None:
    bot = BotProcess(tmp_path, config='[store]\nbackend = "nosuch"\n', start_timeout=30)
    with pytest.raises(RuntimeError, match="exited with") as caught:
        bot.start()
    assert bot.returncode not in (None, 0)
    assert "store.backend: no store backend is registered as 'nosuch'" in str(caught.value)
    assert "(registered: memory, postgresql, sqlite)" in str(caught.value)
    assert not (bot.data_dir / DB_FILE).exists()
