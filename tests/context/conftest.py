"""Fixtures for the Context Runtime: every test runs on both store backends, closed after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from runtime.store.memory import MemoryStore
from runtime.store.protocol import Store
from runtime.store.sqlite import DB_FILENAME, SqliteStore


@pytest_asyncio.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    backend: Store = (
        MemoryStore() if request.param == "memory" else await SqliteStore.open(tmp_path / DB_FILENAME)
    )
    try:
        yield backend
    finally:
        await backend.close()
