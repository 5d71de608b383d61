"""``bot.py``'s own helpers: which config file it reads."""

from __future__ import annotations

from pathlib import Path

import pytest

import bot


def test_config_file_comes_from_the_environment_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GREYWIND_CONFIG", str(tmp_path / "x.toml"))
    assert bot._config_file() == tmp_path / "x.toml"


def test_config_file_defaults_to_the_shipped_one_from_any_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GREYWIND_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert bot._config_file() == bot.HERE / "config" / "greywind.toml"
    assert bot._config_file().exists()
