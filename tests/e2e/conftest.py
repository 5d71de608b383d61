"""Fixtures for end-to-end runs: real ``bot.py`` processes, and the scripted model server beside them.

``start_bot(...)`` starts a bot and stops it (SIGTERM) at teardown; every bot of one test shares one
data directory, so stopping one and starting another is a restart. ``start_bot(model=openai_server)``
points every model role at the scripted server (``tests/conftest.py``'s ``openai_server`` fixture, a
real HTTP server on loopback in the test process) through the ``GREYWIND_LLM_*`` variables.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Protocol

import pytest

from tests.e2e.bot_process import BotProcess
from tests.e2e.live import TEST_API_KEY, TaggedModel
from tests.support.openai_server import ScriptedOpenAIServer

__all__ = ["TEST_API_KEY", "StartBot", "model", "start_bot"]


class StartBot(Protocol):
    def __call__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        config: str | None = None,
        model: ScriptedOpenAIServer | None = None,
    ) -> BotProcess: ...


@pytest.fixture
def start_bot(tmp_path: Path) -> Iterator[StartBot]:
    started: list[BotProcess] = []
    data_dir = tmp_path / "data"

    def start(
        *,
        env: Mapping[str, str] | None = None,
        config: str | None = None,
        model: ScriptedOpenAIServer | None = None,
    ) -> BotProcess:
        merged = dict(env or {})
        if model is not None:
            merged.setdefault("GREYWIND_LLM_BASE_URL", model.base_url)
            merged.setdefault("GREYWIND_LLM_MODEL", "scripted")
            merged.setdefault("GREYWIND_LLM_API_KEY", TEST_API_KEY)
        bot = BotProcess(tmp_path / f"run{len(started)}", env=merged, config=config, data_dir=data_dir)
        started.append(bot)
        return bot.start()

    yield start
    for bot in started:
        with contextlib.suppress(Exception):
            bot.stop(timeout=10)
        bot.kill()


@pytest.fixture(scope="module")
def model() -> Iterator[TaggedModel]:
    """One scripted model server for a module's scenarios, each answered by its own tag."""
    with ScriptedOpenAIServer() as server:
        yield TaggedModel(server)
