"""Fixtures for the Context Runtime: every test runs on every registered store backend, closed after
each test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from runtime.config.store import StoreConfig
from runtime.store.backends import open_store, registered_backends
from runtime.store.protocol import Store
from tests.conftest import backend_ready


@pytest_asyncio.fixture(params=registered_backends())
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    backend_ready(request, request.param)
    backend = await open_store(StoreConfig(backend=request.param), tmp_path)
    try:
        yield backend
    finally:
        await backend.close()
