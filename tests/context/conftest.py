"""Fixtures for the Context Runtime: an in-memory store, closed after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from runtime.store.memory import MemoryStore


@pytest_asyncio.fixture
async def store() -> AsyncIterator[MemoryStore]:
    backend = MemoryStore()
    try:
        yield backend
    finally:
        await backend.close()
