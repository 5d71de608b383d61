"""Fixtures for the store: every registered backend behind one ``store`` fixture, closed after each test.

The backends come from ``runtime.store.backends``: one registered later (by the module that provides
it, imported before the tests are collected) runs the whole contract suite with no change here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from runtime.config.store import StoreConfig
from runtime.store.backends import open_store, registered_backends
from runtime.store.protocol import Store
from tests.conftest import backend_ready


async def open_backend(kind: str, tmp_path: Path) -> Store:
    return await open_store(StoreConfig(backend=kind), tmp_path / "data")


@pytest_asyncio.fixture(params=registered_backends())
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    backend_ready(request, request.param)
    backend = await open_backend(request.param, tmp_path)
    try:
        yield backend
    finally:
        await backend.close()
