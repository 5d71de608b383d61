"""One replay of the group-chat fixture, shared by the tests that read its output."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.helpers import CONFIG, GROUPS, Run, run_cli


@pytest.fixture(scope="session")
def groups_replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    """``python -m runtime.replay groups.jsonl --config replay.toml --dump-packets DIR``: the run and DIR."""
    packets = tmp_path_factory.mktemp("packets")
    run = run_cli(GROUPS, "--config", CONFIG, "--dump-packets", packets)
    assert run.code == 0, run.stderr
    return run, packets
