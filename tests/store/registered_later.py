"""A pytest plugin that registers one more store backend before the tests are collected, as a backend
module would: ``test_backends.py`` checks that the contract suite then runs over it too."""

from __future__ import annotations

from pathlib import Path

from runtime.config.store import StoreConfig
from runtime.store.backends import register_backend
from runtime.store.memory import MemoryStore
from runtime.store.protocol import Store


class LaterStore(MemoryStore):
    """The in-memory backend under another name."""


async def _open(config: StoreConfig, data_dir: Path) -> Store:
    return LaterStore()


register_backend("later", _open)
