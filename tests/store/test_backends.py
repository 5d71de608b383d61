"""Store backends by name: ``[store] backend`` opens what is registered under it, and nothing else."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Protocol

import pytest

from runtime.config import ConfigError, parse_config
from runtime.config.store import StoreConfig
from runtime.store import roles
from runtime.store.backends import open_store, register_backend, registered_backends
from runtime.store.memory import MemoryStore
from runtime.store.protocol import Store
from runtime.store.records import StoredMessage
from runtime.store.sqlite import DB_FILENAME, SqliteStore


class RecordingStore(MemoryStore):
    """A backend of its own: the in-memory one, remembering where it was opened."""

    def __init__(self, config: StoreConfig, data_dir: Path) -> None:
        super().__init__()
        self.config = config
        self.data_dir = data_dir


@pytest.mark.asyncio
async def test_a_registered_name_in_the_config_opens_that_backend(tmp_path: Path) -> None:
    async def opener(config: StoreConfig, data_dir: Path) -> Store:
        return RecordingStore(config, data_dir)

    unregister = register_backend("recording", opener)
    try:
        assert "recording" in registered_backends()
        config = parse_config({"store": {"backend": "recording", "busy_timeout_ms": 7}})
        store = await open_store(config.store, tmp_path)
        assert isinstance(store, RecordingStore)
        assert (store.data_dir, store.config.busy_timeout_ms) == (tmp_path, 7)
        await store.append_messages([StoredMessage("group:1", "1", "u", "A", 1.0, "灰风你好")])
        assert await store.count_messages() == 1
        await store.close()
    finally:
        unregister()
    assert "recording" not in registered_backends()
    with pytest.raises(ConfigError):
        await open_store(config.store, tmp_path)


@pytest.mark.asyncio
async def test_an_unknown_backend_is_a_config_error_naming_the_key_and_the_choices(tmp_path: Path) -> None:
    config = parse_config({"store": {"backend": "postgres"}})
    with pytest.raises(ConfigError) as caught:
        await open_store(config.store, tmp_path)
    assert caught.value.keys == ("store.backend",)
    message = str(caught.value)
    assert "store.backend" in message
    assert "'postgres'" in message
    assert "memory, postgresql, sqlite" in message
    assert os.listdir(tmp_path) == []  # nothing was created on the way


@pytest.mark.asyncio
async def test_a_name_is_registered_once(tmp_path: Path) -> None:
    async def opener(config: StoreConfig, data_dir: Path) -> Store:
        raise AssertionError("never opened")

    with pytest.raises(ValueError, match="already registered"):
        register_backend("sqlite", opener)
    store = await open_store(StoreConfig(), tmp_path)  # the built-in is still the one used
    assert isinstance(store, SqliteStore)
    await store.close()


@pytest.mark.asyncio
async def test_the_default_is_the_sqlite_file_in_the_data_dir(tmp_path: Path) -> None:
    assert StoreConfig().backend == "sqlite"
    store = await open_store(StoreConfig(), tmp_path / "data")
    try:
        assert store.statistics().backend == "sqlite"
        assert (tmp_path / "data" / DB_FILENAME).is_file()
    finally:
        await store.close()


def _methods(protocol: type) -> set[str]:
    return {
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and inspect.isfunction(value)
    }


def test_the_roles_split_the_store_protocol_without_overlap() -> None:
    role_types = [
        roles.StoreLifecycle,
        roles.BatchWrites,
        roles.MessageRows,
        roles.EventRows,
        roles.LexiconRows,
        roles.ContextRows,
        roles.MemoryRows,
        roles.MemoryLayerRows,
        roles.LedgerRows,
        roles.EpisodeRows,
        roles.RuntimeStateRows,
    ]
    assert set(Store.__bases__) - {Protocol} == set(role_types)  # Store adds nothing of its own
    assert not _methods(Store)
    seen: dict[str, str] = {}
    for role in role_types:
        for name in _methods(role):
            assert name not in seen, f"{name} is in {seen.get(name)} and {role.__name__}"
            seen[name] = role.__name__
    every = {n for n in dir(Store) if not n.startswith("_") and callable(getattr(Store, n))}
    assert set(seen) == every


PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")


def test_the_contract_suite_runs_over_a_backend_registered_before_collection() -> None:
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [*PYTEST, "-p", "tests.store.registered_later", "tests/store/test_contract.py", "-k", "later"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    passed = re.search(r"(\d+) passed", run.stdout)
    assert passed is not None, run.stdout
    assert int(passed.group(1)) > 30  # the whole contract, over the "later" backend
