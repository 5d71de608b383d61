"""Fixtures for the memory layer: an SQLite store (closed after each test) and the scripted model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from runtime.store.sqlite import DB_FILENAME, SqliteStore
from tests.support.memory_dialogue import fact_compressor
from tests.support.openai_server import ScriptedOpenAIServer

CHAT_REPLY = "好的，我的看法是先把要点列出来，再一步步来，不要着急。"


@pytest_asyncio.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = await SqliteStore.open(tmp_path / DB_FILENAME)
    try:
        yield store
    finally:
        await store.close()


@pytest_asyncio.fixture
async def model(openai_server: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    """The scripted server answering compressions by :func:`fact_compressor` and chat with a reply."""
    openai_server.respond_with(fact_compressor)
    openai_server.load({"default": {"text": CHAT_REPLY}})
    return openai_server
