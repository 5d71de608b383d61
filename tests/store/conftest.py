"""Fixtures for the store: every backend behind one ``store`` fixture, closed after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from runtime.store.memory import MemoryStore
from runtime.store.protocol import Store
from runtime.store.sqlite import SqliteStore


async def open_backend(kind: str, tmp_path: Path) -> Store:
    if kind == "memory":
        return MemoryStore()
    return await SqliteStore.open(tmp_path / "data" / "greywind.sqlite3")


@pytest_asyncio.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    backend = await open_backend(request.param, tmp_path)
    try:
        yield backend
    finally:
        await backend.close()
